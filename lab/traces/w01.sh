set -e
d=/sys/kernel/config/nullb/nullb1; mkdir $d
echo 4096 > $d/size; echo 2 > $d/queue_mode; echo 2 > $d/irqmode; echo 20000 > $d/completion_nsec; echo 64 > $d/hw_queue_depth; echo 1 > $d/memory_backed; echo 1 > $d/power
sleep 0.5
dev=$(cat /sys/block/nullb1/dev)
mkfs.ext4 -q -F -E lazy_itable_init=0 /dev/nullb1; mkdir -p /tmp/wb; mount /dev/nullb1 /tmp/wb
echo "+memory" > /sys/fs/cgroup/cgroup.subtree_control
echo $((128<<20)) > /proc/sys/vm/dirty_bytes; echo $((64<<20)) > /proc/sys/vm/dirty_background_bytes
echo "dev=$dev nproc=$(nproc)" > /mnt/meta.txt
cat /sys/block/nullb1/queue/max_sectors_kb /sys/block/nullb1/queue/nr_requests /proc/sys/vm/dirty_expire_centisecs /proc/sys/vm/dirty_writeback_centisecs >> /mnt/meta.txt
grep -E "MemTotal|MemFree|MemAvailable" /proc/meminfo >> /mnt/meta.txt
mkdir -p /sys/fs/cgroup/a /sys/fs/cgroup/b
echo "$dev wbps=4194304" > /sys/fs/cgroup/a/io.max
echo "$dev wbps=2097152" > /sys/fs/cgroup/b/io.max
T=/sys/kernel/tracing
echo 0 > $T/tracing_on; echo > $T/trace; echo 65536 > $T/buffer_size_kb
for e in writeback/balance_dirty_pages writeback/bdi_dirty_ratelimit writeback/global_dirty_state writeback/writeback_start writeback/writeback_written writeback/writeback_queue_io writeback/writeback_wait block/block_rq_issue block/block_rq_complete; do echo 1 > $T/events/$e/enable || echo "no $e"; done
echo 1 > $T/tracing_on
cd /tmp/wb
sh -c "echo \$\$ > /sys/fs/cgroup/a/cgroup.procs; exec fio --name=a --filename=wb-a.dat --rw=write --bs=1M --ioengine=sync --direct=0 --size=1g --runtime=30 --time_based --write_lat_log=/mnt/a --log_avg_msec=0 --output-format=json --output=/mnt/fio-a.json" &
sh -c "echo \$\$ > /sys/fs/cgroup/b/cgroup.procs; exec fio --name=b --filename=wb-b.dat --rw=write --bs=1M --ioengine=sync --direct=0 --size=1g --runtime=30 --time_based --write_lat_log=/mnt/b --log_avg_msec=0 --output-format=json --output=/mnt/fio-b.json" &
wait
echo 0 > $T/tracing_on
cat $T/trace > /mnt/trace.txt
cat /sys/fs/cgroup/a/io.stat /sys/fs/cgroup/b/io.stat > /mnt/io.stat
cat /sys/fs/cgroup/a/memory.stat > /mnt/memory.stat.a
echo done

set -e
# lab/matrix/c05-saturation-sizes.toml by hand, with the block layer's
# request events (getrq, insert, issue, requeue, complete) and fio's
# per-IO completion latency logs
d=/sys/kernel/config/nullb/nullb1; mkdir $d
echo 4096 > $d/size; echo 10 > $d/mbps; echo 2 > $d/queue_mode; echo 2 > $d/irqmode; echo 20000 > $d/completion_nsec; echo 1 > $d/power
sleep 0.5
dev=$(cat /sys/block/nullb1/dev)
echo "dev=$dev nproc=$(nproc)" > /mnt/meta.txt
cat /sys/block/nullb1/queue/max_sectors_kb /sys/block/nullb1/queue/nr_requests /sys/block/nullb1/queue/scheduler >> /mnt/meta.txt
echo "$dev ctrl=user model=linear rbps=10485760 rseqiops=2560 rrandiops=2560 wbps=10485760 wseqiops=2560 wrandiops=2560" > /sys/fs/cgroup/io.cost.model
echo "$dev enable=1 ctrl=user rpct=0 rlat=250000 wpct=0 wlat=250000 min=100 max=100" > /sys/fs/cgroup/io.cost.qos
mkdir -p /sys/fs/cgroup/a /sys/fs/cgroup/b
T=/sys/kernel/tracing
echo 0 > $T/tracing_on; echo > $T/trace; echo 131072 > $T/buffer_size_kb
for e in block/block_getrq block/block_rq_insert block/block_rq_issue block/block_rq_requeue block/block_rq_complete; do echo 1 > $T/events/$e/enable; done
echo 1 > $T/tracing_on
cd /mnt
sh -c "echo \$\$ > /sys/fs/cgroup/a/cgroup.procs; exec fio --name=a --filename=/dev/nullb1 --direct=1 --ioengine=libaio --norandommap --rw=randread --bs=64k --iodepth=16 --runtime=5 --time_based --write_lat_log=a --log_avg_msec=0 --output-format=json --output=/mnt/fio-a.json" &
sh -c "echo \$\$ > /sys/fs/cgroup/b/cgroup.procs; exec fio --name=b --filename=/dev/nullb1 --direct=1 --ioengine=libaio --norandommap --rw=randread --bs=4k --iodepth=32 --runtime=5 --time_based --write_lat_log=b --log_avg_msec=0 --output-format=json --output=/mnt/fio-b.json" &
wait
echo 0 > $T/tracing_on
cat $T/trace > /mnt/trace.txt
cat /sys/fs/cgroup/a/io.stat /sys/fs/cgroup/b/io.stat > /mnt/io.stat
echo done

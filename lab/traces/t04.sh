set -e
d=/sys/kernel/config/nullb/nullb1; mkdir $d
echo 4096 > $d/size; echo 2 > $d/queue_mode; echo 2 > $d/irqmode; echo 20000 > $d/completion_nsec; echo 1 > $d/power
sleep 0.5
dev=$(cat /sys/block/nullb1/dev)
mkdir -p /sys/fs/cgroup/cg1
echo "$dev wbps=1048576" > /sys/fs/cgroup/cg1/io.max
T=/sys/kernel/tracing
echo 0 > $T/tracing_on; echo > $T/trace; echo 65536 > $T/buffer_size_kb
echo blk > $T/current_tracer
echo 1 > /sys/block/nullb1/trace/enable
echo 1 > $T/tracing_on
sh -c "echo \$\$ > /sys/fs/cgroup/cg1/cgroup.procs; exec fio --name=w --filename=/dev/nullb1 --rw=randwrite --bs=16k --direct=1 --ioengine=libaio --iodepth=8 --norandommap --runtime=5 --time_based --output-format=json --output=/mnt/fio.json --write_lat_log=/mnt/w --log_avg_msec=0"
echo 0 > $T/tracing_on
cat $T/trace > /mnt/trace.txt
grep HZ= /proc/cmdline || true
cat /sys/block/nullb1/queue/rotational
echo done

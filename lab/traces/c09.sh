set -e
# lab/matrix/c09-merges.toml with iocost's donation tracepoints: a
# sequential 4k writer submitting 16 IOs per call (/a, weight 100) beside
# a random 4k reader (/b, weight 300) on a 10 MiB/s null_blk, vrate pinned.
# QUEUE=1 (KLAB_PASS=QUEUE) adds block_bio_queue, block_getrq and
# block_rq_insert: where a request waits before its issue
d=/sys/kernel/config/nullb/nullb1; mkdir $d
echo 4096 > $d/size; echo 10 > $d/mbps; echo 2 > $d/queue_mode; echo 2 > $d/irqmode; echo 20000 > $d/completion_nsec; echo 1 > $d/power
sleep 0.5
dev=$(cat /sys/block/nullb1/dev)
echo "dev=$dev nproc=$(nproc)" > /mnt/meta.txt
cat /sys/block/nullb1/queue/max_sectors_kb /sys/block/nullb1/queue/nr_requests >> /mnt/meta.txt
echo "$dev ctrl=user model=linear rbps=10485760 rseqiops=2560 rrandiops=2560 wbps=10485760 wseqiops=2560 wrandiops=2560" > /sys/fs/cgroup/io.cost.model
echo "$dev enable=1 ctrl=user rpct=0 rlat=250000 wpct=0 wlat=250000 min=100 max=100" > /sys/fs/cgroup/io.cost.qos
mkdir -p /sys/fs/cgroup/a /sys/fs/cgroup/b
echo 100 > /sys/fs/cgroup/a/io.weight; echo 300 > /sys/fs/cgroup/b/io.weight
queue=""; [ "${QUEUE:-0}" = 1 ] && queue="block/block_bio_queue block/block_getrq block/block_rq_insert"
T=/sys/kernel/tracing
echo 0 > $T/tracing_on; echo > $T/trace; echo 65536 > $T/buffer_size_kb
for e in iocost/iocost_ioc_vrate_adj iocost/iocost_iocg_activate iocost/iocost_iocg_idle iocost/iocost_inuse_shortage iocost/iocost_inuse_transfer iocost/iocost_inuse_adjust iocost/iocost_iocg_forgive_debt block/block_rq_complete block/block_rq_issue $queue; do echo 1 > $T/events/$e/enable; done
echo 1 > $T/tracing_on
sh -c "echo \$\$ > /sys/fs/cgroup/a/cgroup.procs; exec fio --name=a --filename=/dev/nullb1 --direct=1 --ioengine=libaio --norandommap --rw=write --bs=4k --iodepth=32 --iodepth_batch_submit=16 --runtime=5 --time_based --output-format=json --output=/mnt/fio-a.json" &
sh -c "echo \$\$ > /sys/fs/cgroup/b/cgroup.procs; exec fio --name=b --filename=/dev/nullb1 --direct=1 --ioengine=libaio --norandommap --rw=randread --bs=4k --iodepth=32 --runtime=5 --time_based --output-format=json --output=/mnt/fio-b.json" &
wait
echo 0 > $T/tracing_on
cat $T/trace > /mnt/trace.txt
cat /sys/fs/cgroup/a/io.stat /sys/fs/cgroup/b/io.stat > /mnt/io.stat
echo done

set -e
d=/sys/kernel/config/nullb/nullb1; mkdir $d
echo 4096 > $d/size; echo 170 > $d/mbps; echo 2 > $d/queue_mode; echo 2 > $d/irqmode; echo 20000 > $d/completion_nsec; echo 64 > $d/hw_queue_depth; echo 1 > $d/power
sleep 0.5
dev=$(cat /sys/block/nullb1/dev)
echo "dev=$dev nproc=$(nproc)" > /mnt/meta.txt
cat /sys/block/nullb1/queue/max_sectors_kb /sys/block/nullb1/queue/nr_requests >> /mnt/meta.txt
echo "$dev ctrl=user model=linear rbps=173471131 rseqiops=3566 rrandiops=3566 wbps=173333269 wseqiops=3566 wrandiops=3566" > /sys/fs/cgroup/io.cost.model
echo "$dev enable=1 ctrl=user rpct=90.00 rlat=3500 wpct=90 wlat=3500 min=80 max=10000" > /sys/fs/cgroup/io.cost.qos
mkdir -p /sys/fs/cgroup/cgA /sys/fs/cgroup/cgB
T=/sys/kernel/tracing
echo 0 > $T/tracing_on; echo > $T/trace; echo 131072 > $T/buffer_size_kb
# INUSE=1 (KLAB_PASS=INUSE) adds iocost's donation tracepoints; BS=32k or 256k
# (KLAB_PASS=BS) gives cgB the block size of c07 or c08
inuse=""; [ "${INUSE:-0}" = 1 ] && inuse="iocost/iocost_inuse_shortage iocost/iocost_inuse_transfer iocost/iocost_inuse_adjust iocost/iocost_iocg_forgive_debt"
for e in iocost/iocost_ioc_vrate_adj iocost/iocost_iocg_activate iocost/iocost_iocg_idle $inuse block/block_rq_complete block/block_rq_issue block/block_rq_insert block/block_getrq; do echo 1 > $T/events/$e/enable; done
echo 1 > $T/tracing_on
sh -c "echo \$\$ > /sys/fs/cgroup/cgA/cgroup.procs; exec fio --name=cgA --filename=/dev/nullb1 --direct=1 --ioengine=libaio --norandommap --rw=randrw --rwmixread=50 --bs=1m --iodepth=128 --runtime=10 --time_based --group_reporting --unified_rw_reporting=mixed --output-format=json --output=/mnt/fio-a.json" &
sh -c "echo \$\$ > /sys/fs/cgroup/cgB/cgroup.procs; exec fio --name=cgB --filename=/dev/nullb1 --direct=1 --ioengine=libaio --norandommap --rw=randrw --rwmixread=50 --bs=${BS:-4k} --iodepth=1 --rate_iops=100 --runtime=10 --time_based --group_reporting --unified_rw_reporting=mixed --output-format=json --output=/mnt/fio-b.json" &
wait
echo 0 > $T/tracing_on
cat $T/trace > /mnt/trace.txt
cat /sys/fs/cgroup/cgA/io.stat /sys/fs/cgroup/cgB/io.stat > /mnt/io.stat
echo done

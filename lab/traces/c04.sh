set -e
d=/sys/kernel/config/nullb/nullb1; mkdir $d
echo 4096 > $d/size; echo 10 > $d/mbps; echo 2 > $d/queue_mode; echo 2 > $d/irqmode; echo 20000 > $d/completion_nsec; echo 1 > $d/power
sleep 0.5
dev=$(cat /sys/block/nullb1/dev)
echo "dev=$dev nproc=$(nproc)" > /mnt/meta.txt
cat /sys/block/nullb1/queue/max_sectors_kb /sys/block/nullb1/queue/nr_requests >> /mnt/meta.txt
echo "$dev ctrl=user model=linear rbps=20971520 rseqiops=5120 rrandiops=5120 wbps=20971520 wseqiops=5120 wrandiops=5120" > /sys/fs/cgroup/io.cost.model
echo "$dev enable=1 ctrl=user rpct=90 rlat=5000 wpct=90 wlat=5000 min=25 max=400" > /sys/fs/cgroup/io.cost.qos
mkdir -p /sys/fs/cgroup/a /sys/fs/cgroup/b
echo 100 > /sys/fs/cgroup/a/io.weight; echo 200 > /sys/fs/cgroup/b/io.weight
T=/sys/kernel/tracing
echo 0 > $T/tracing_on; echo > $T/trace; echo 65536 > $T/buffer_size_kb
# QUEUE=1 (KLAB_PASS=QUEUE) adds block_getrq and block_rq_insert: when
# each request got its tag (iocost's alloc_time) and entered staging
queue=""; [ "${QUEUE:-0}" = 1 ] && queue="block/block_getrq block/block_rq_insert"
# SCHED=1 (KLAB_PASS="QUEUE SCHED") adds block_bio_queue (a bio entering
# the queue, before iocost's throttle) and the scheduler's wake-ups and
# switches: when each fio process runs, and on which CPU
sched=""; [ "${SCHED:-0}" = 1 ] && sched="block/block_bio_queue sched/sched_wakeup sched/sched_switch" && echo 262144 > $T/buffer_size_kb
# TIMER=1 (KLAB_PASS=TIMER) adds the timer interrupts and each hrtimer's
# start and expiry (with the clock the interrupt read): how many of the
# worker's request timers one interrupt ends, and when it comes
[ "${TIMER:-0}" = 1 ] && sched="$sched irq_vectors/local_timer_entry irq_vectors/local_timer_exit timer/hrtimer_start timer/hrtimer_expire_entry timer/hrtimer_expire_exit" && echo 262144 > $T/buffer_size_kb
for e in iocost/iocost_ioc_vrate_adj iocost/iocost_iocg_activate iocost/iocost_iocg_idle block/block_rq_complete block/block_rq_issue $queue $sched; do [ -e $T/events/$e/enable ] || { echo "no tracepoint $e" >&2; exit 1; }; echo 1 > $T/events/$e/enable; done
echo 1 > $T/tracing_on
for g in a b; do
  sh -c "echo \$\$ > /sys/fs/cgroup/$g/cgroup.procs; exec fio --name=$g --filename=/dev/nullb1 --direct=1 --ioengine=libaio --norandommap --rw=randread --bs=4k --iodepth=32 --runtime=8 --time_based --output-format=json --output=/mnt/fio-$g.json" &
done
wait
echo 0 > $T/tracing_on
cat $T/trace > /mnt/trace.txt
cat /sys/fs/cgroup/a/io.stat /sys/fs/cgroup/b/io.stat > /mnt/io.stat
echo done

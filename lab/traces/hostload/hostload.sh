# Guest side of hostload-run.sh: a QD1 4 KiB random reader on a null_blk in
# timer mode (20 us, no bandwidth limit), pinned to vCPU 0, 5 s under each
# guest condition, with the block_rq_issue/_complete tracepoints.
set -e
d=/sys/kernel/config/nullb/nullb1; mkdir $d
echo 4096 > $d/size; echo 2 > $d/queue_mode; echo 2 > $d/irqmode; echo 20000 > $d/completion_nsec; echo 1 > $d/power
sleep 0.5
echo "nproc=$(nproc)" > /mnt/meta.txt
T=/sys/kernel/tracing
echo 65536 > $T/buffer_size_kb
for e in block/block_rq_complete block/block_rq_issue; do echo 1 > $T/events/$e/enable; done
run() { # condition name
  echo 0 > $T/tracing_on; echo > $T/trace; echo 1 > $T/tracing_on
  taskset -c 0 fio --name=r --filename=/dev/nullb1 --direct=1 --ioengine=libaio --norandommap \
    --rw=randread --bs=4k --iodepth=1 --runtime=5 --time_based --output-format=json \
    --output=/mnt/fio-$1.json >/dev/null
  echo 0 > $T/tracing_on
  cat $T/trace | xz -6 > /mnt/trace-$1.txt.xz
}
# a busy loop on one vCPU (its output closed: $(...) returns at once)
spin() { taskset -c $1 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!; }
run alone
s1=$(spin 1); run spin1; kill $s1
s0=$(spin 0); s1=$(spin 1); run spin01; kill $s0 $s1
echo done

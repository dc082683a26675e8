/*
 * cmd-run.c — `gpuctl run`: lease GPUs (waiting in line with --wait), then
 * run a command on them — no shell in between, in its own process group,
 * with CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER=PCI_BUS_ID set — forward
 * SIGINT/SIGTERM/SIGHUP/SIGQUIT to it, and exit with its status (128+N when
 * a signal N ended it). The lease files pass to the command, so its GPUs
 * stay leased for exactly as long as any process of the job lives.
 */
#include "runjob.h"

#include <getopt.h>
#include <stdlib.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpuctl run [-n N | --gpus LIST] [filters] [--wait[=TIMEOUT]] [--name NAME] -- CMD [ARGS...]\n"
		"\n"
		"Lease GPUs, run CMD on them, release them when it ends.\n"
		"  -n N                   how many GPUs (default 1)\n"
		"      --gpus=LIST        exactly these GPUs (indices, UUIDs or PCI bus ids)\n"
		"      --min-free-mem=SIZE  only GPUs with this much free memory (20G, 20GiB, 20000M)\n"
		"      --max-util=PCT     only GPUs at most this busy\n"
		"      --model=GLOB       only GPUs whose name matches (A100, '*H100*')\n"
		"      --exclude=LIST     never these GPUs\n"
		"      --shared           allow GPUs where other users' processes run\n"
		"      --ids=index|uuid   how CUDA_VISIBLE_DEVICES names the GPUs (default: index)\n"
		"      --wait [TIMEOUT]   wait in line for busy GPUs (first come, first served), at most\n"
		"                         TIMEOUT (90, 30s, 5m, 2h; also --wait=5m)\n"
		"      --name=NAME        a name for the job, shown by gpuctl leases and ls\n"
		"\n"
		"Surviving preemption and hangs (gpuctl-run(1)):\n"
		"      --spot             watch the cloud's preemption notices; on one, SIGTERM the job\n"
		"      --cloud=C          aws, gcp, azure, auto (default) or none; implies --spot\n"
		"      --poll=SEC         how often to ask the metadata service (default 0.4 s)\n"
		"      --grace=DUR        SIGTERM to SIGKILL (default: the notice's own deadline)\n"
		"      --on-notice=CMD    run CMD (through sh) when a notice arrives\n"
		"      --on-warning=SIG   send SIG (USR1 ...) on a warning that is not a preemption (AWS\n"
		"                         rebalance, GCP/Azure maintenance): checkpoint now; implies --spot\n"
		"      --ack              Azure: acknowledge the event once the job has stopped\n"
		"      --restart=POLICY   never (default), on-failure, on-preempt or always\n"
		"      --max-restarts=N   at most N restarts (default 3)\n"
		"      --backoff=FIRST[:MAX]  wait before a restart, doubling (default 1s:5m)\n"
		"      --checkpoint-dir=DIR   GPUCTL_CHECKPOINT_DIR, and GPUCTL_RESUME_FROM its newest checkpoint\n"
		"      --hang-timeout=DUR stop a job whose GPUs show no progress for this long\n"
		"      --no-explain       do not keep the job's last output to explain a failure\n"
		"      --retry-on=CLASSES retry a failure of these classes (oom-fragmentation, oom-other-process,\n"
		"                         oom-transient, oom-too-big, nccl-timeout, xid, gpu-lost), at most\n"
		"                         --max-restarts times\n"
		"      --bigger           an oom-too-big retry moves to GPUs with the memory it needed\n"

		"\n"
		"CMD gets CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER=PCI_BUS_ID, GPUCTL_GPUS (indices),\n"
		"GPUCTL_GPU_UUIDS and GPUCTL_NUM_GPUS. gpuctl exits with CMD's status, 128+N if a\n"
		"signal N ended it, 127 if CMD was not found, 126 if it could not be run.\n");
}

int cmd_run(const struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		RUNJOB_LONG_OPTIONS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct runjob j;
	runjob_init(&j);
	int c, rc = EXIT_OK;
	optind = 1;
	opterr = 0;
	/* '+': stop at the command, whose own options are not ours */
	while ((c = getopt_long(argc, argv, "+:n:h", opts, NULL)) != -1) {
		if (c == 'w')
			optarg = cli_optional_next(optarg, argc, argv); /* --wait 5m */
		if ((rc = runjob_option(&j, c, optarg)) >= 0) {
			if (rc)
				goto out;
			continue;
		}
		if (c == 'h') {
			usage(stdout);
			rc = EXIT_OK;
			goto out;
		}
		rc = cli_bad_option("run", c, argv);
		goto out;
	}
	if (optind >= argc) {
		cli_err("run needs a command: gpuctl run [options] -- CMD [ARGS...]");
		rc = EXIT_USAGE;
		goto out;
	}
	rc = runjob_exec(&j, g, argv + optind);
out:
	runjob_release(&j);
	return rc;
}

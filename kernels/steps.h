/*
 * steps.h — the steps of a batch's trip through the executor, as the CUDA
 * executor times them (gi_cuda_args.timing: thread 0 reads %globaltimer
 * after each step's barrier and adds the difference to the CTA's
 * counters, gi_exec_counters.step_ns; nothing runs when timing is off).
 *
 * The order is the trip's (kernels/exec_cuda.cu, gi_cta_serve): a step
 * that runs more than once per batch (a stalled stream's extra round)
 * adds each time.  POLL is the time between the end of the previous batch
 * and the start of this one: the decision (under load no doorbell load:
 * the read-ahead answers it), when idle the doorbell loads and the wait;
 * in launch mode it is 0 (each launch starts with fresh shared memory, and
 * the launch's own cost is the host's to see).  A persistent CTA under
 * load stages the next batch beside the previous one's SEQUENCE (STAGE
 * is then ~0) and hands a slot back during the next batch's PARSE
 * (exec_cuda.cu, staging ahead).  Plain C: nvcc, the host and tools
 * include it.
 */
#ifndef GI_STEPS_H
#define GI_STEPS_H

enum gi_step {
	GI_STEP_POLL = 0, /* previous batch done -> this one found (thread 0) */
	GI_STEP_STAGE,    /* the slot's descriptors into shared memory */
	GI_STEP_PARSE,    /* a thread per packet: headers, stream, format */
	GI_STEP_ICRC,     /* rocev2 ICRCs left pending by parse */
	GI_STEP_SCAN,     /* one stream per group: ranks, predecessors, frame starts (block scans) */
	GI_STEP_RUN,      /* a thread per record: its place if the stream is one in-order run, and the link */
	GI_STEP_SEQUENCE, /* per frame of the run (thread 0) or per stream through the serial steps */
	GI_STEP_PLACE,    /* the payload copies */
	GI_STEP_VERIFY,   /* frames checked against their sender's CRC (rocev2.frame_crc) */
	GI_STEP_TENSOR,   /* final frames' typed tensors written (a stream's tensor:) */
	GI_STEP_COMMIT,   /* final frames made visible */
	GI_STEP_END,      /* counters, their mirrors, the slot handed back */
	GI_STEP__COUNT
};

#define GI_STEP_NAMES                                                                                    \
	{ "poll", "stage", "parse", "icrc", "scan", "run", "sequence", "place", "verify", "tensor", "commit", \
	  "end" }

#endif /* GI_STEPS_H */

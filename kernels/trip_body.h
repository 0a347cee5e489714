/*
 * trip_body.h — the batch's trip (trip.h), written once.  Not a header of
 * its own: a backend includes it, once, after defining how a step's
 * workers run:
 *
 *   GI_TRIP_FN                   the function's qualifiers and name; it takes
 *                                (struct gi_trip *t, GI_TRIP_BE *be)
 *   GI_TRIP_BE                   the backend's own context type (`void` if none)
 *   GI_TRIP_FOR(step, w, nw)     a loop header: the statement after it runs as
 *                                worker w of nw, for every worker of the step
 *                                (GPU: once, as this thread of the CTA; host:
 *                                w = 0 .. nw - 1 in turn)
 *   GI_TRIP_PLACE_FOR(w, nw, lane, nlanes)   the same for phase 3's payloads
 *                                (worker) and 16-byte chunks (lane)
 *   GI_TRIP_EARLY_FOR(w, nw, lane, nlanes)   the same for the payloads copied
 *                                beside 2b's one worker (phase_sequence_solo.h,
 *                                gi_solo_enter), by workers other than that
 *                                one (GPU: the warps after its; none where
 *                                t->early is 0)
 *   GI_TRIP_SOLO_FOR(lane, nlanes)  the lanes of the one worker's warp that
 *                                finish 2b (phase_sequence_solo.h, gi_solo_finish;
 *                                the host: lane 0 of 1)
 *   GI_TRIP_COMMIT_FOR(w, nw, lane, nlanes)  the same for phase 4's streams
 *                                (worker) and the lanes of a warp that
 *                                work on one together (lane; the host's
 *                                nlanes 1: a stream's lanes sync within)
 *   GI_TRIP_ONE                  `if (...)` that one worker passes
 *   GI_TRIP_BARRIER()            every worker's effects before any later step
 *   GI_TRIP_ALL(x), GI_TRIP_ANY(x)  a barrier that also ANDs / ORs x over
 *                                the workers (the host's one x already is)
 *   GI_TRIP_SCAN_RANKS(t, be)    ranks and predecessors by a scan, barriers
 *                                included, or not: 1 if it scanned (the GPU:
 *                                a block scan, one stream only; the host: one
 *                                pass, any streams)
 *   GI_TRIP_SCAN_STARTS(t, be)   one stream's run: its frames' first records
 *                                (the GPU: a block scan; the host: a pass)
 *   GI_TRIP_MARK(step)           a step ended (the GPU times it: steps.h)
 *   GI_TRIP_BESIDE(t, be)        what the workers round 0's sequence step
 *                                leaves idle do beside it (the GPU: stage the
 *                                next batch, before any copy beside 2b; the
 *                                host: nothing)
 *
 * Every worker takes every branch below alike: what they test (solo, run,
 * verifying, round, more) is the same for all once the barrier before it
 * has passed.
 */
#if !defined(GI_TRIP_FN) || !defined(GI_TRIP_BE) || !defined(GI_TRIP_FOR) || !defined(GI_TRIP_PLACE_FOR) || \
	!defined(GI_TRIP_EARLY_FOR) || !defined(GI_TRIP_SOLO_FOR) || !defined(GI_TRIP_COMMIT_FOR) ||         \
	!defined(GI_TRIP_ONE) || !defined(GI_TRIP_BARRIER) || !defined(GI_TRIP_ALL) || !defined(GI_TRIP_ANY) || \
	!defined(GI_TRIP_SCAN_RANKS) || !defined(GI_TRIP_SCAN_STARTS) || !defined(GI_TRIP_MARK) ||              \
	!defined(GI_TRIP_BESIDE)
#error "trip_body.h: define every GI_TRIP_ hook first (see its head)"
#endif

GI_TRIP_FN(struct gi_trip *t, GI_TRIP_BE *be)
{
	struct gi_exec_ctx *ctx = t->ctx;
	struct gi_batch_hdr *h = t->h;
	const uint32_t solo = t->n_streams == 1;
	(void)be;

	/* 1: a worker per packet; 1b: the rocev2 ICRCs parse left pending, if any */
	uint32_t pending = 0;
	GI_TRIP_FOR(GI_STEP_PARSE, w, nw)
		pending |= gi_phase_parse(ctx, t->owner, t->slot, t->max_pkts, t->split, h, (int)t->icrc_inline, w, nw);
	const uint32_t icrc = GI_TRIP_ANY(pending);
	GI_TRIP_MARK(GI_STEP_PARSE);
	if (icrc) {
		GI_TRIP_FOR(GI_STEP_ICRC, w, nw)
			gi_phase_icrc(t->slot, t->max_pkts, t->split, h, w, nw, t->t8);
		GI_TRIP_BARRIER();
		GI_TRIP_MARK(GI_STEP_ICRC);
	}

	/* 2a: ranks and predecessors by a scan where the backend has one; then a worker
	 * per record, its place against the stream's state, then its link to its
	 * predecessor */
	if (GI_TRIP_SCAN_RANKS(t, be))
		GI_TRIP_MARK(GI_STEP_SCAN);
	GI_TRIP_FOR(GI_STEP_RUN, w, nw)
		gi_phase_run_place(ctx, h, w, nw);
	GI_TRIP_BARRIER();
	uint32_t ok = 1;
	GI_TRIP_FOR(GI_STEP_RUN, w, nw)
		ok &= gi_phase_run_link(ctx, h, w, nw);
	const uint32_t run = GI_TRIP_ALL(ok); /* every record one in-order run */
	GI_TRIP_MARK(GI_STEP_RUN);
	if (solo && run) { /* the records that start the run's frames, in order */
		GI_TRIP_SCAN_STARTS(t, be);
		GI_TRIP_MARK(GI_STEP_SCAN);
	}

	for (;;) {
		/* 2b: one stream's run per frame (the first group's frames entered, then
		 * the rest, its payloads copied meanwhile), then a worker per record
		 * sets its bit; otherwise a worker per stream, its records in order;
		 * the backend's work beside it in round 0 (the workers it leaves idle) */
		if (h->round == 0)
			GI_TRIP_BESIDE(t, be);
		if (solo && run && h->round == 0) {
			struct gi_stream_rt *st = &ctx->streams[gi_trip_stream(t, 0)];
			/* a first group of GI_SOLO_EARLY_FRAMES needs as many frames in the run (the
			 * scan's, read by every worker alike): else no barrier between the two parts */
			const uint32_t early = t->early && h->solo_frames >= GI_SOLO_EARLY_FRAMES;
			GI_TRIP_ONE {
				gi_phase_sequence_begin(st);
				gi_solo_enter(st, h, t->max_pkts, t->now, early);
			}
			if (early) {
				GI_TRIP_BARRIER();
				GI_TRIP_EARLY_FOR(w, nw, lane, nlanes) /* (the host's turns: the copies first) */
					gi_phase_place_early(ctx, t->slot, t->max_pkts, t->split, h, w, nw, lane, nlanes);
			}
			GI_TRIP_SOLO_FOR(lane, nlanes) { /* the rest by that worker's warp, its frames a lane each */
				const uint32_t more = gi_solo_finish(st, h, t->max_pkts, t->now, lane, nlanes);
				if (lane == 0) {
					h->more = more;
					h->runs++;
				}
			}
			GI_TRIP_BARRIER();
			GI_TRIP_FOR(GI_STEP_SEQUENCE, w, nw)
				gi_phase_solo_place(ctx, h, w, nw);
		} else {
			GI_TRIP_FOR(GI_STEP_SEQUENCE, w, nw)
				for (uint32_t k = w; k < t->n_streams; k += nw)
					if (gi_phase_sequence_stream(ctx, gi_trip_stream(t, k), h, t->now))
						GI_ATOMIC_ADD_U32(&h->more, 1);
		}
		GI_TRIP_BARRIER();
		GI_TRIP_MARK(GI_STEP_SEQUENCE);

		/* 3: the payloads; the barrier puts every payload store before any commit's
		 * release (and any frame CRC) */
		GI_TRIP_PLACE_FOR(w, nw, lane, nlanes)
			gi_phase_place(ctx, t->slot, t->max_pkts, t->split, h, w, nw, lane, nlanes);
		GI_TRIP_BARRIER();
		GI_TRIP_MARK(GI_STEP_PLACE);

		/*
		 * Frames checked against their sender's CRC (rocev2.frame_crc): every
		 * worker on each.  Only those streams' defer and pend_n are read, by
		 * every worker alike (2b wrote them before the barrier above), and a
		 * barrier follows before any worker's commit resets them.
		 */
		uint32_t verifying = 0;
		for (uint32_t k = 0; k < t->n_streams; k++) {
			struct gi_stream_rt *st = &ctx->streams[gi_trip_stream(t, k)];
			if (!gi_stream_verifies(st)) /* configuration: the same for every worker */
				continue;
			verifying = 1;
			if (st->defer && st->pend_n) {
				GI_TRIP_FOR(GI_STEP_VERIFY, w, nw)
					gi_stream_pending_pass(st, 2, w, nw, t->t8, NULL);
				GI_TRIP_BARRIER();
				GI_TRIP_ONE
					st->crc_parts = 1; /* the commit finishes them (after the barrier below) */
			}
		}
		if (verifying) {
			GI_TRIP_BARRIER();
			GI_TRIP_MARK(GI_STEP_VERIFY);
		}

		/*
		 * Final frames as typed tensors (tensor:): every worker on each,
		 * before the commit publishes them.  Reads what the CRC's barriers
		 * left alone (payload, bitmap, counts); writes the tensor areas only.
		 */
		uint32_t converting = 0;
		for (uint32_t k = 0; k < t->n_streams; k++) {
			struct gi_stream_rt *st = &ctx->streams[gi_trip_stream(t, k)];
			if (st->tensor.sample == GI_TS_NONE) /* configuration: the same for every worker */
				continue;
			converting = 1;
			if (st->defer && st->pend_n) {
				GI_TRIP_FOR(GI_STEP_TENSOR, w, nw)
					gi_stream_pending_pass(st, 3, w, nw, t->t8, NULL);
				GI_TRIP_BARRIER();
				GI_TRIP_ONE
					st->tensor_parts = 1; /* the commit publishes them as they are */
			}
		}
		if (converting) {
			GI_TRIP_BARRIER();
			GI_TRIP_MARK(GI_STEP_TENSOR);
		}

		/* 4: a worker per stream makes its round's frames visible; the others
		 * may do the backend's own work meanwhile */
		GI_TRIP_COMMIT_FOR(w, nw, lane, nlanes)
			for (uint32_t k = w; k < t->n_streams; k += nw)
				gi_phase_commit_stream(ctx, gi_trip_stream(t, k), t->late_next, lane, nlanes);
		const uint32_t again = GI_TRIP_ANY(h->more != 0); /* a stream stalled on a busy slot */
		GI_TRIP_MARK(GI_STEP_COMMIT);
		GI_TRIP_ONE { /* rounds so far; another one's stalls start from none, and it copies every payload */
			h->round++;
			h->more = 0;
			h->solo_early = 0;
		}
		if (!again)
			break;
		GI_TRIP_BARRIER();
	}
}

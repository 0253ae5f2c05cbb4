package cleaner

import (
	"context"
	"errors"
	"runtime/debug"
)

// cleanLog runs one log's pass and records its outcome. A panic or error
// stays with this log: it is counted, reported, and the round goes on.
func (c *Cleaner) cleanLog(ctx context.Context, st *logState) {
	st.mu.Lock()
	defer st.mu.Unlock()
	c.mu.Lock()
	if st.removed {
		c.mu.Unlock()
		return
	}
	policy, upper, requested := st.policy, st.upper, st.deleteRecords
	c.mu.Unlock()

	began := c.opts.Clock.Now()
	res, deleted, err := c.pass(ctx, st.log, &st.quiet, policy, upper, requested)
	res.Dir = st.dir
	res.Duration = c.opts.Clock.Now().Sub(began)
	// A pass that Stop cut short did not fail: what it deleted is counted
	// and the next round takes the log up again.
	interrupted := err != nil && stoppedBy(ctx, err)

	c.mu.Lock()
	m := &st.metrics
	m.LastRun = c.opts.Clock.Now()
	m.SegmentsDeleted += res.Segments
	m.BytesDeleted += res.Bytes
	m.RecordsDeleted += res.Records
	m.StartOffset = res.NewStartOffset
	m.PinnedBy = res.PinnedBy
	c.total.SegmentsDeleted += res.Segments
	c.total.BytesDeleted += res.Bytes
	c.total.RecordsDeleted += res.Records
	if interrupted {
		// Neither a failure nor a success: the log's state stays as it was.
	} else if err != nil {
		m.Failures++
		m.Failed, m.Err = true, err
		c.total.Failures++
	} else {
		m.Failed, m.Err = false, nil
		if requested >= 0 && res.NewStartOffset >= requested && st.deleteRecords == requested {
			st.deleteRecords = -1
		}
	}
	c.mu.Unlock()

	ev := c.opts.Events
	if ev.SegmentDeleted != nil {
		for _, d := range deleted {
			d.Dir = st.dir
			ev.SegmentDeleted(d)
		}
	}
	if interrupted {
		return
	}
	if err != nil {
		c.logger.Warn("cleaner: pass failed", "dir", st.dir, "err", err)
		if ev.Failure != nil {
			ev.Failure(Failure{Dir: st.dir, Err: err})
		}
		return
	}
	if res.PinnedBy >= 0 {
		c.logger.Warn("cleaner: a segment with a future timestamp holds back time retention",
			"dir", st.dir, "segment", res.PinnedBy)
	}
	if res.Segments > 0 {
		// What retention removed, as Kafka logs "Deleting segments due
		// to retention ... breach": an operator wondering where data
		// went finds it here.
		c.logger.Info("cleaner: deleted segments", "dir", st.dir, "segments", res.Segments, "bytes", res.Bytes,
			"records", res.Records, "start_offset", res.NewStartOffset)
	}
	if ev.LogCleaned != nil {
		ev.LogCleaned(res)
	}
	c.compactLog(ctx, st, policy, upper)
}

// pass decides and deletes for one log. Only the Log's own methods change
// it: Roll for a breaching active segment, then DeleteBefore, which
// checkpoints the new start before removing anything.
func (c *Cleaner) pass(ctx context.Context, l Log, quiet *quietLook, p Policy, upper, requested int64) (res LogCleaned, deleted []SegmentDeleted, err error) {
	res.PinnedBy = -1
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	if err := ctx.Err(); err != nil {
		return res, nil, err
	}
	l.SetFileDeleteDelay(p.FileDeleteDelay)
	l.ExpireDeleted()
	old, end, now := l.StartOffset(), l.EndOffset(), c.opts.Clock.Now()
	res.OldStartOffset, res.NewStartOffset = old, old
	sizeRule := p.deletes() && p.RetentionBytes >= 0
	if q := *quiet; q.valid && q.policy == p && q.upper == upper && q.requested == requested && q.start == old &&
		end >= q.end && (!sizeRule || end == q.end) && now.Before(q.until) {
		// Nothing that decides has changed: skip the segment view, whose
		// cost grows with the segments, for an answer known already.
		res.PinnedBy = q.pinnedBy
		return res, nil, nil
	}
	quiet.valid = false
	in := Input{
		Segments:    l.Segments(),
		Policy:      p,
		Now:         now,
		StartOffset: max(old, requested),
		UpperBound:  upper,
	}
	plan := Decide(in)
	if plan.Pinned != nil {
		res.PinnedBy = plan.Pinned.BaseOffset
	}
	// A plan that deletes segments without moving the start removes what
	// a crash left wholly below it (the start was checkpointed, the files
	// not yet removed): DeleteBefore at the start does just that.
	if plan.Empty() && plan.NewStart <= old {
		if until, ok := QuietUntil(in, plan); ok {
			*quiet = quietLook{valid: true, policy: p, upper: upper, requested: requested, start: old, end: end, until: until, pinnedBy: res.PinnedBy}
		}
		return res, nil, nil
	}
	if plan.RollFirst {
		if err := l.Roll(); err != nil {
			return res, nil, err
		}
	}
	n, err := l.DeleteBefore(plan.NewStart)
	if err != nil {
		return res, nil, err
	}
	res.NewStartOffset = l.StartOffset()
	res.Records = res.NewStartOffset - old
	// Appends between the view and the roll can keep the old active
	// segment (its records are not all below the new start): only the
	// first n of the plan went.
	for i := 0; i < n && i < len(plan.Delete); i++ {
		s := plan.Delete[i]
		res.Segments++
		res.Bytes += s.Size
		deleted = append(deleted, SegmentDeleted{BaseOffset: s.BaseOffset, NextOffset: s.NextOffset, Size: s.Size, Reason: plan.Reasons[i]})
	}
	return res, deleted, nil
}

// stoppedBy reports whether err is ctx's own cancellation: the cleaner was
// stopped, the pass did not fail.
func stoppedBy(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(err, ctx.Err())
}

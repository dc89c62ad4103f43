package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/retention"
)

// retainEvery is how often a serving memoryd applies the retention
// policies after the pass at its start.
const retainEvery = time.Hour

// retainWait bounds how long a retention erasure's scrub waits for readers
// to let the WAL be truncated, as a forget's.
const retainWait = 10 * time.Second

// testHooks are what a test gives the program through its context: a
// clock for the service it opens (recorded_at, and the time retention
// weighs), serve's retention ticks in place of an hourly ticker, and a
// call after each of serve's retention passes. Outside tests there are
// none.
type testHooks struct {
	now         func() time.Time
	retainTicks <-chan time.Time
	retainPass  func(memory.RetentionRun, error)
}

type testHooksKey struct{}

// withTestHooks returns ctx carrying h, for a test.
func withTestHooks(ctx context.Context, h testHooks) context.Context {
	return context.WithValue(ctx, testHooksKey{}, h)
}

// testHooksOf returns the hooks of ctx, none outside tests.
func testHooksOf(ctx context.Context) testHooks {
	h, _ := ctx.Value(testHooksKey{}).(testHooks)
	return h
}

// retainer applies the retention policies while memoryd serves: once at
// the start, then at every tick, until stopped.
type retainer struct {
	stopOnce sync.Once
	cancel   context.CancelFunc
	done     chan struct{}
}

// startRetainer starts the passes of global (and of the tasks' own
// policies, which apply even when global is off) on svc, each logged.
// ticks, when nil, is an hourly ticker.
func startRetainer(ctx context.Context, svc *memory.Service, global retention.Policy, h testHooks, log *slog.Logger) *retainer {
	ctx, cancel := context.WithCancel(ctx)
	r := &retainer{cancel: cancel, done: make(chan struct{})}
	ticks := h.retainTicks
	var ticker *time.Ticker
	if ticks == nil {
		ticker = time.NewTicker(retainEvery)
		ticks = ticker.C
	}
	if global.On() {
		log.Info("retention: tasks with no activity for their policy's period are erased, at the start and every hour",
			"retain", global.String(), "every", retainEvery.String())
	} else {
		log.Debug("retention: no global policy (--retain off); only tasks with a period of their own are erased",
			"every", retainEvery.String())
	}
	go func() {
		defer close(r.done)
		if ticker != nil {
			defer ticker.Stop()
		}
		for {
			run, err := retainPass(ctx, svc, global, log)
			if h.retainPass != nil {
				h.retainPass(run, err)
			}
			select {
			case <-ctx.Done():
				return
			case <-ticks:
			}
		}
	}()
	return r
}

// stop ends the passes and waits for the one running, if any.
func (r *retainer) stop() {
	r.stopOnce.Do(func() {
		r.cancel()
		<-r.done
	})
}

// retainPass runs one retention pass and logs each erasure, each task
// skipped or failed, and what the pass did.
func retainPass(ctx context.Context, svc *memory.Service, global retention.Policy, log *slog.Logger) (memory.RetentionRun, error) {
	run, err := svc.ApplyRetention(ctx, global, memory.ApplyOptions{
		Erase: memory.EraseOptions{Wait: retainWait},
		After: func(due memory.RetentionDue, res memory.Erasure, err error) {
			if res.Position > 0 {
				log.Info("retention: task erased", "task_id", due.TaskID, "last_activity", due.LastActivity, "retain", due.Retain,
					"source", due.Source, "position", res.Position, "events", res.Events)
			}
			if err != nil && res.Position > 0 {
				log.Error("retention: the erased task's scrub failed", "task_id", due.TaskID, "err", err.Error())
			}
		},
	})
	for _, s := range run.Skipped {
		log.Info("retention: task kept", "task_id", s.TaskID, "why", s.Why)
	}
	for _, f := range run.Failed {
		log.Error("retention: erasing a task failed", "task_id", f.TaskID, "err", f.Why)
	}
	switch {
	case err != nil && ctx.Err() == nil:
		log.Error("retention: the pass failed", "err", err.Error())
	case err == nil && len(run.Due) > 0:
		log.Info("retention: pass", "retain", run.Policy, "now", run.Now, "tasks", run.Tasks, "due", len(run.Due),
			"erased", len(run.Erased), "kept", len(run.Skipped), "failed", len(run.Failed))
	case err == nil:
		log.Debug("retention: pass, nothing due", "retain", run.Policy, "now", run.Now, "tasks", run.Tasks)
	}
	return run, err
}

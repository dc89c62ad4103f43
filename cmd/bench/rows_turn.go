package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The turn row: a model turn with one tool call as the Pi extension makes
// it, on a memoryd of its own. Its ceiling is one round trip of the same
// bytes to a bare server.
var fxTurn = &fixture{name: "turn server", setup: (*bench).setupTurn}

// turnsPerRep is the model turns one repetition times in each form.
const turnsPerRep = 30

// turnFixture is the turn row's memoryd, an agent for each form of the
// turn, and the bare server answering with the bytes memoryd answers the
// new form with.
type turnFixture struct {
	md, bare *proc
	now, old *turnAgent
	// A turn's request and response bodies, as the last one had them.
	reqBytes, oldBytes, respBytes int
	bareBody                      []byte // the new form's request bodies, one after the other
}

// turnAgent is one attached agent and its branch as memoryd has it.
type turnAgent struct {
	context  string
	branch   []string
	revision int64
	turns    int
	// held is the old form's tool result: synced before the next model call.
	held, heldID string
}

// setupTurn starts the memoryd, attaches a session for each form, syncs
// each one's first user message whole and runs one turn of the new form
// to learn the bytes the bare server answers with.
func (b *bench) setupTurn(ctx context.Context) error {
	md, err := b.startMemoryd(ctx, "memoryd(turn)", filepath.Join(b.scratch, "turn.db"))
	if err != nil {
		return err
	}
	f := &turnFixture{md: md}
	b.turn = f
	for i, a := range []**turnAgent{&f.now, &f.old} {
		task, err := b.attach(ctx, md, fmt.Sprintf("turn%d", i))
		if err != nil {
			return err
		}
		*a = &turnAgent{context: fmt.Sprintf(`{"task_id":%q,"agent":"/root"}`, task)}
		body := fmt.Appendf(nil, `{"context":%s,"entries":[%s],"branch":["u0"]}`, (*a).context, turnEntry("u0", "", "user", `"go"`))
		var res syncAnswer
		if err := b.cl.postJSON(ctx, md.url+"/v1/history/sync", body, &res); err != nil {
			return fmt.Errorf("turn: the first sync: %w", err)
		}
		(*a).branch, (*a).revision = []string{"u0"}, res.Revision
	}
	req, resp, err := b.newTurn(ctx)
	if err != nil {
		return err
	}
	f.bareBody = req
	file := filepath.Join(b.scratch, "turn-response.json")
	if err := os.WriteFile(file, resp, 0o600); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	f.bare, err = startProc(ctx, "bare-server(turn)", []string{self, bareVerb, file}, nil, b.progress)
	return err
}

// turnEntry is a Pi message entry as the extension syncs it.
func turnEntry(id, parent, role, content string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	extra := ""
	switch role {
	case "assistant":
		extra = `,"api":"faux","provider":"faux","model":"scripted","usage":{"input":2800,"output":12,"cacheRead":0,"cacheWrite":0,"totalTokens":2812,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse"`
	case "toolResult":
		extra = `,"toolCallId":"c1","toolName":"echo","isError":false`
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2027-01-02T00:00:00.000Z","message":{"role":%q,"content":%s%s,"timestamp":1798848000000}}`,
		id, p, role, content, extra)
}

// answer and result are turn k's model answer, one tool call, after the
// branch's leaf, and that call's result after the answer.
func (a *turnAgent) answer(k int) (string, string) {
	id := fmt.Sprintf("a%07d", k)
	return id, turnEntry(id, a.branch[len(a.branch)-1], "assistant", fmt.Sprintf(`[{"type":"toolCall","id":"c%d","name":"echo","arguments":{"n":%d}}]`, k, k))
}

func (a *turnAgent) result(k int, answerID string) (string, string) {
	id := fmt.Sprintf("r%07d", k)
	return id, turnEntry(id, answerID, "toolResult", `[{"type":"text","text":"echoed"}]`)
}

// syncPart is a sync body without its context: entry and the delta that
// appends its id. memoryd's branch is then one longer, one revision on.
func (a *turnAgent) syncPart(entry, id string) string {
	part := fmt.Sprintf(`"entries":[%s],"delta":{"base_revision":%d,"keep":%d,"append":[%q]}`, entry, a.revision, len(a.branch), id)
	a.branch = append(a.branch, id)
	a.revision++
	return part
}

func (a *turnAgent) usage(k int) string {
	return fmt.Sprintf(`"tokens_used":%d,"context_window":128000`, 2800+k)
}

func (a *turnAgent) admit(k int) string {
	return fmt.Sprintf(`"call_id":"c%d","tool_name":"echo","arguments":{"n":%d}`, k, k)
}

// newTurn makes one model turn as the extension makes it with the turn
// route, in the steady state: the syncs held since the last request (the
// last answer's, held at its tool result, and that result's, held before
// the model call) with the usage report in one request, then the admit of
// the tool call. It returns the request and response bodies.
func (b *bench) newTurn(ctx context.Context) (req, resp []byte, err error) {
	a := b.turn.now
	a.turns++
	k := a.turns
	answerID, answer := a.answer(k)
	resultID, result := a.result(k, answerID)
	turn := fmt.Appendf(nil, `{"context":%s,"syncs":[{%s},{%s}],"usage":{%s}}`, a.context, a.syncPart(answer, answerID), a.syncPart(result, resultID), a.usage(k))
	admit := fmt.Appendf(nil, `{"context":%s,%s}`, a.context, a.admit(k))
	r1, err := b.cl.post(ctx, b.turn.md.url+"/v1/lifecycle/turn", turn, true)
	if err != nil {
		return nil, nil, fmt.Errorf("turn %d: %w", k, err)
	}
	r2, err := b.cl.post(ctx, b.turn.md.url+"/v1/lifecycle/admit", admit, true)
	if err != nil {
		return nil, nil, fmt.Errorf("turn %d: admit: %w", k, err)
	}
	if !turnAnswered(r1, r2) {
		return nil, nil, fmt.Errorf("turn %d: each sync must store its entry, the usage make nothing due and the admit allow: %.300s / %.200s", k, r1, r2)
	}
	b.turn.reqBytes, b.turn.respBytes = len(turn)+len(admit), len(r1)+len(r2)
	return append(turn, admit...), append(r1, r2...), nil
}

// turnAnswered reports whether a turn's answer stored one entry by each
// of its two syncs and made nothing due by its usage, and whether the
// admit's answer allows the call.
func turnAnswered(turn, admit []byte) bool {
	var t struct {
		Syncs []struct {
			Stored int `json:"stored"`
		} `json:"syncs"`
		Usage *struct {
			Due *string `json:"due"`
		} `json:"usage"`
	}
	var a struct {
		Allow *bool `json:"allow"`
	}
	if json.Unmarshal(turn, &t) != nil || json.Unmarshal(admit, &a) != nil {
		return false
	}
	return len(t.Syncs) == 2 && t.Syncs[0].Stored == 1 && t.Syncs[1].Stored == 1 &&
		t.Usage != nil && t.Usage.Due == nil && a.Allow != nil && *a.Allow
}

// oldTurn makes one model turn as the extension made it before the turn
// route, in the steady state: the last tool result's sync before the
// model call, the usage report, the admit, and the answer's sync at the
// tool result.
func (b *bench) oldTurn(ctx context.Context) error {
	a := b.turn.old
	a.turns++
	k := a.turns
	url := b.turn.md.url
	var bodies [][2]string
	if a.held != "" {
		bodies = append(bodies, [2]string{"/v1/history/sync", a.syncPart(a.held, a.heldID)})
	}
	bodies = append(bodies, [2]string{"/v1/lifecycle/usage", a.usage(k)}, [2]string{"/v1/lifecycle/admit", a.admit(k)})
	answerID, answer := a.answer(k)
	bodies = append(bodies, [2]string{"/v1/history/sync", a.syncPart(answer, answerID)})
	a.heldID, a.held = a.result(k, answerID)
	size := 0
	for _, p := range bodies {
		body := fmt.Appendf(nil, `{"context":%s,%s}`, a.context, p[1])
		size += len(body)
		if _, err := b.cl.post(ctx, url+p[0], body, false); err != nil {
			return fmt.Errorf("old turn %d: %s: %w", k, p[0], err)
		}
	}
	b.turn.oldBytes = size
	return nil
}

// measureTurn times turnsPerRep turns of each form and as many bare round
// trips, in the repetition's order. The figure is the median client time
// of a turn with the turn route, the ceiling the median bare round trip;
// the medians of the server's CPU per turn (or round trip) go in the notes.
func (b *bench) measureTurn(ctx context.Context, rep repetition) (sample, error) {
	f := b.turn
	var now, old, bare, cpuNow, cpuOld, cpuBare []float64
	// turns times n turns of one, each one's client time into wall and
	// the CPU process pid used meanwhile into cpu.
	turns := func(wall, cpu *[]float64, pid int, one func() error) error {
		for range turnsPerRep {
			c0, err := threadsCPU(pid)
			if err != nil {
				return err
			}
			t := time.Now()
			if err := one(); err != nil {
				return err
			}
			*wall = append(*wall, time.Since(t).Seconds())
			c1, err := threadsCPU(pid)
			if err != nil {
				return err
			}
			*cpu = append(*cpu, c1-c0)
		}
		return nil
	}
	figure := func() error {
		if err := turns(&now, &cpuNow, f.md.pid(), func() error { _, _, err := b.newTurn(ctx); return err }); err != nil {
			return err
		}
		return turns(&old, &cpuOld, f.md.pid(), func() error { return b.oldTurn(ctx) })
	}
	ceiling := func() error {
		return turns(&bare, &cpuBare, f.bare.pid(), func() error {
			_, err := b.cl.post(ctx, f.bare.url+"/", f.bareBody, true)
			return err
		})
	}
	if err := rep.pair(figure, ceiling); err != nil {
		return sample{}, err
	}
	sn, so, sb := spreadOf(now), spreadOf(old), spreadOf(bare)
	cn, co, cb := spreadOf(cpuNow), spreadOf(cpuOld), spreadOf(cpuBare)
	s := sample{fig: sn.med, ceil: sb.med, ratio: sn.med / sb.med}
	s.add("the separate requests of before, client time per turn (s)", so.med)
	s.add("memoryd CPU per turn, turn route (s)", cn.med)
	s.add("memoryd CPU per turn, separate requests (s)", co.med)
	s.add("bare server CPU per round trip (s)", cb.med)
	s.add("request bodies per turn, turn route (bytes)", float64(f.reqBytes))
	s.add("request bodies per turn, separate requests (bytes)", float64(f.oldBytes))
	s.add("response bodies per turn, turn route (bytes)", float64(f.respBytes))
	b.logf("%s: %s per turn [%s–%s] (separate requests %s), bare %s; memoryd CPU %s per turn (separate %s), bare %s",
		rep.row, ms(sn.med), ms(sn.lo), ms(sn.hi), ms(so.med), ms(sb.med), ms(cn.med), ms(co.med), ms(cb.med))
	return s, nil
}

func (b *bench) turnNotes() string {
	return fmt.Sprintf("A model turn with one tool call as the Pi extension makes it in the steady state, by a Go client sending the "+
		"extension's requests: `POST /v1/lifecycle/turn` carrying the two syncs held since the last request (the last answer's, "+
		"held at its tool result, and that result's, held before the model call: one entry and a one-id delta each) with the usage "+
		"report, then `POST /v1/lifecycle/admit` of the tool call. %d turns per repetition on one agent of a memoryd of its own, "+
		"one after the other, timed by the client over loopback HTTP; the figure is their median. The ceiling is one round trip of "+
		"the same bytes (the two request bodies as one body, answered with memoryd's two response bodies) to the bare server "+
		"(`bench %s`), as many times. For comparison, on a second agent: the four requests the extension made before the turn route "+
		"(the tool result's sync before the model call, usage, admit, the answer's sync at the tool result), the same entries and "+
		"counts. CPU is the server's, summed over its threads from /proc/<pid>/task/*/schedstat around each turn (or round trip); the median of the repetition's.", turnsPerRep, bareVerb)
}

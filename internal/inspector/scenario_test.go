package inspector_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/memoryd/memoryd/internal/memory"
)

var bg = context.Background()

// tool calls a tool as cc with call id callID, failing the test on error.
func tool(t *testing.T, svc *memory.Service, cc memory.CallContext, callID, name, args string) memory.ToolResult {
	t.Helper()
	cc.CallID = callID
	res, err := svc.CallTool(bg, name, cc, json.RawMessage(args), "")
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	return res
}

// fallbackScenario attaches an agent with a 100000-token window, writes
// a note, reports usage past the fallback threshold (reminder at 75000
// used, fallback at 87500, hard rollover at 95000), arms the fence, saves the
// checkpoint through the one admitted write and rolls over to w2 with
// reason fallback. It returns the caller.
func fallbackScenario(t *testing.T, svc *memory.Service) memory.CallContext {
	t.Helper()
	w, hard := int64(100000), int64(95000)
	res, err := svc.Attach(bg, memory.AttachRequest{SessionKey: "/sessions/fallback.jsonl",
		Budget: &memory.BudgetInput{ContextWindow: &w, HardRolloverUsedTokens: &hard}}, "")
	if err != nil {
		t.Fatal(err)
	}
	cc := memory.CallContext{TaskID: res.TaskID, Agent: res.Agent}
	tool(t, svc, cc, "c1", "notes_write_file", `{"path":"plan.md","text":"step one\n"}`)
	for _, used := range []int64{20000, 60000, 88000} {
		if _, err := svc.ReportUsage(bg, cc, &used, &w, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Delivered(bg, cc, "fallback", "w1", "fb-1", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Arm(bg, cc, "fallback", "w1", "fb-1", ""); err != nil {
		t.Fatal(err)
	}
	args := `{"path":"checkpoint.md","text":"goal: the inspector\nnext: tests\n"}`
	if _, err := svc.Admit(bg, cc, "c2", "notes_write_file", json.RawMessage(args), ""); err != nil {
		t.Fatal(err)
	}
	tool(t, svc, cc, "c2", "notes_write_file", args)
	if _, err := svc.PrepareRollover(bg, cc, "fallback", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CommitRollover(bg, cc, "w2", "", ""); err != nil {
		t.Fatal(err)
	}
	used := int64(15000)
	if _, err := svc.ReportUsage(bg, cc, &used, &w, ""); err != nil {
		t.Fatal(err)
	}
	svc.StopAudit() // flushes the audit of the calls above
	return cc
}

func childRequest(taskID, key, name string) memory.AttachRequest {
	return memory.AttachRequest{SessionKey: key, Task: &memory.TaskRef{TaskID: taskID, ParentAgent: "/root", AgentName: name}}
}

func ccOf(taskID, agent string) memory.CallContext {
	return memory.CallContext{TaskID: taskID, Agent: agent}
}

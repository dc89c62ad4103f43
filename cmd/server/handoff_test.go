package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/memory"
)

// TestHandoff: memoryd handoff prints the command that opens another
// agent's CLI on a task, with MEMORYD_TASK naming the task, the agent it
// continues and the new agent's name; a wrong --to, task or --from is
// refused.
func TestHandoff(t *testing.T) {
	db := filepath.Join(t.TempDir(), "m.db")
	var imported struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal([]byte(fxMust(t, "import-session", "--db", db, filepath.Join("..", "..", "testdata", "sessions", "tools.jsonl"))), &imported); err != nil {
		t.Fatal(err)
	}
	var h handoff
	if err := json.Unmarshal([]byte(fxMust(t, "handoff", imported.TaskID, "--to", "codex", "--db", db, "--json")), &h); err != nil {
		t.Fatal(err)
	}
	var ref memory.TaskRef
	if err := json.Unmarshal([]byte(h.Env["MEMORYD_TASK"]), &ref); err != nil {
		t.Fatal(err)
	}
	if h.Agent != "/root/codex" || h.From != "/root" || ref != (memory.TaskRef{TaskID: imported.TaskID, ParentAgent: "/root", AgentName: "codex"}) ||
		h.Argv[0] != "codex" || !strings.Contains(h.Prompt, "/root/notes/checkpoint.md") {
		t.Errorf("the hand-off: %+v", h)
	}
	shell := fxMust(t, "handoff", imported.TaskID, "--to", "claude-code", "--db", db)
	if !strings.HasPrefix(shell, `MEMORYD_TASK='{"task_id":"`+imported.TaskID+`","parent_agent":"/root","agent_name":"claude_code"}' claude '`) {
		t.Errorf("the shell line: %s", shell)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"handoff", imported.TaskID, "--to", "cursor", "--db", db}, "give --to pi, claude-code or codex"},
		{[]string{"handoff", "no-such-task", "--to", "pi", "--db", db}, "no task no-such-task"},
		{[]string{"handoff", imported.TaskID, "--to", "pi", "--from", "/root/x", "--db", db}, "has the agents /root"},
		{[]string{"handoff", imported.TaskID, "--to", "pi", "--as", "Bad-Name", "--db", db}, "--as"},
	} {
		_, stderr, err := fxRun(t, nil, c.args...)
		if err == nil || !strings.Contains(stderr+err.Error(), c.want) {
			t.Errorf("%v: %v %s, want %q", c.args, err, stderr, c.want)
		}
	}
}

// TestPlanHandoffNames: the new agent takes the CLI's name below the agent
// it continues, the next free one when that is taken.
func TestPlanHandoffNames(t *testing.T) {
	task := memory.TaskView{TaskID: "T", Agents: []memory.TaskAgentView{
		{Agent: "/root", LastActivityPosition: 9}, {Agent: "/root/codex", LastActivityPosition: 3}, {Agent: "/root/codex_2", LastActivityPosition: 4},
	}}
	h, err := planHandoff(task, memory.KindCodex, handoffCLIs[memory.KindCodex], "", "")
	if err != nil || h.Agent != "/root/codex_3" {
		t.Errorf("the next free name: %+v %v", h, err)
	}
	if _, err := planHandoff(task, memory.KindCodex, handoffCLIs[memory.KindCodex], "", "codex"); err == nil {
		t.Error("a taken --as was accepted")
	}
	h, err = planHandoff(task, memory.KindPi, handoffCLIs[memory.KindPi], "/root/codex", "")
	if err != nil || h.Agent != "/root/codex/pi" || h.From != "/root/codex" {
		t.Errorf("--from: %+v %v", h, err)
	}
}

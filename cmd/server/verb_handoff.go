package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/memory"
)

var handoffVerb = verb{
	name:     "handoff",
	synopsis: "handoff TASK --to pi|claude-code|codex [--from AGENT] [--as NAME] [--json] [--db F]",
	summary:  "print the command that continues a task in another coding agent, as a new agent of the task",
	about: `
Prints the shell command that opens another coding agent on task TASK of the database --db: the
agent's CLI with MEMORYD_TASK set, so that its session joins the task as the new agent
<AGENT>/<NAME> instead of becoming a task of its own, and a first prompt that tells it where the
agent it continues keeps its notes and history. Claude Code and Codex need memoryd set up (memoryd
setup claude-code|codex): their SessionStart hook then adds the hand-off's bootstrap (the other
agent's windows, requests and notes) to the context; Pi needs the memoryd extension, which reads
MEMORYD_TASK itself. The new agent reads the first one's notes by their full path and its history
with agent_name, as a Pi sub-agent reads its parent's. Nothing is written: the agent registers when
its session starts.

--from is the agent whose work goes on (default: the task's agent with the latest activity); --as
names the new agent (default the CLI's name: pi, claude_code or codex, with _2, _3, … when taken).
--json prints {"task_id","from","agent","to","env","argv","prompt","shell"} instead.`,
	args: []arg{{name: "TASK", about: "the task to continue (memoryd tasks lists them)"}},
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		db := fs.String("db", "", "database `F` to read, which must exist (env MEMORYD_DB; default the one serve uses)")
		to := fs.String("to", "", "the coding agent to continue in: `AGENT` pi, claude-code or codex")
		from := fs.String("from", "", "the agent whose work goes on, `ADDRESS` (default: the latest active)")
		as := fs.String("as", "", "the new agent's `NAME` below --from ([a-z0-9_]+)")
		asJSON := fs.Bool("json", false, "print the hand-off as JSON")
		return func(ctx context.Context, in *invocation) error {
			cli, ok := handoffCLIs[*to]
			if !ok {
				return &usageError{fmt.Sprintf("--to %q: give --to pi, claude-code or codex", *to)}
			}
			path, err := databaseToRead(in.getenv, *db, in.stderr)
			if err != nil {
				return err
			}
			svc, err := openExistingService(ctx, in.getenv, path, in.stderr)
			if err != nil {
				return err
			}
			defer svc.Close()
			task, err := findTask(ctx, svc, in.args[0])
			if err != nil {
				return err
			}
			h, err := planHandoff(task, *to, cli, *from, *as)
			if err != nil {
				return err
			}
			if *asJSON {
				return writeJSON(in.stdout, h)
			}
			fmt.Fprintf(in.stderr, "handoff: task %s: %s's work goes on in %s as %s; run:\n", h.TaskID, h.From, cli.title, h.Agent)
			_, err = fmt.Fprintln(in.stdout, h.Shell)
			return err
		}
	},
}

// handoffCLI is a coding agent a task can be handed to.
type handoffCLI struct {
	command, title, name string
}

// handoffCLIs are the agents, by --to.
var handoffCLIs = map[string]handoffCLI{
	memory.KindPi:         {command: "pi", title: "Pi", name: "pi"},
	memory.KindClaudeCode: {command: "claude", title: "Claude Code", name: "claude_code"},
	memory.KindCodex:      {command: "codex", title: "Codex", name: "codex"},
}

// handoff is what handoff prints.
type handoff struct {
	TaskID string            `json:"task_id"`
	From   string            `json:"from"`
	Agent  string            `json:"agent"`
	To     string            `json:"to"`
	Env    map[string]string `json:"env"`
	Argv   []string          `json:"argv"`
	Prompt string            `json:"prompt"`
	Shell  string            `json:"shell"`
}

// findTask returns the task with id, reading the task list page by page.
func findTask(ctx context.Context, svc *memory.Service, id string) (memory.TaskView, error) {
	before := int64(0)
	for {
		page, err := svc.Tasks(ctx, before, memory.TasksMaxLimit)
		if err != nil {
			return memory.TaskView{}, err
		}
		for _, t := range page.Tasks {
			if t.TaskID == id {
				return t, nil
			}
		}
		if page.NextBefore == nil {
			return memory.TaskView{}, fmt.Errorf("no task %s in the database (memoryd tasks lists them)", id)
		}
		before = *page.NextBefore
	}
}

// planHandoff chooses the agent whose work goes on and the new agent's
// name, and makes the command.
func planHandoff(task memory.TaskView, to string, cli handoffCLI, from, as string) (handoff, error) {
	if len(task.Agents) == 0 {
		return handoff{}, fmt.Errorf("task %s has no agent to continue", task.TaskID)
	}
	taken := map[string]bool{}
	var latest memory.TaskAgentView
	for _, a := range task.Agents {
		taken[a.Agent] = true
		if a.LastActivityPosition >= latest.LastActivityPosition {
			latest = a
		}
	}
	if from == "" {
		from = latest.Agent
	} else if !taken[from] {
		agents := make([]string, 0, len(task.Agents))
		for _, a := range task.Agents {
			agents = append(agents, a.Agent)
		}
		slices.Sort(agents)
		return handoff{}, &usageError{fmt.Sprintf("--from %s: task %s has the agents %s", from, task.TaskID, strings.Join(agents, ", "))}
	}
	name := as
	if name == "" {
		name = cli.name
		for n := 2; taken[from+"/"+name]; n++ {
			name = fmt.Sprintf("%s_%d", cli.name, n)
		}
	}
	agent, err := address.Child(from, name)
	if err != nil {
		return handoff{}, &usageError{fmt.Sprintf("--as %q: %v", name, err)}
	}
	if taken[agent] {
		return handoff{}, &usageError{fmt.Sprintf("--as %s: task %s has an agent %s already", name, task.TaskID, agent)}
	}
	ref, err := json.Marshal(memory.TaskRef{TaskID: task.TaskID, ParentAgent: from, AgentName: name})
	if err != nil {
		return handoff{}, err
	}
	prompt := fmt.Sprintf("You continue task %s, which agent %s began; memoryd keeps its work. Read its checkpoint first "+
		"(notes_read_file with path %s; notes_list_files_by_prefix with prefix %s lists its notes), then its history "+
		"(history_list_windows, history_list_items and history_search_contents with agent_name %s), and go on where it stopped.",
		task.TaskID, from, address.Full(from, "checkpoint.md"), address.NotesRoot(from), from)
	h := handoff{TaskID: task.TaskID, From: from, Agent: agent, To: to, Env: map[string]string{"MEMORYD_TASK": string(ref)},
		Argv: []string{cli.command, prompt}, Prompt: prompt}
	h.Shell = "MEMORYD_TASK=" + shellQuote(string(ref)) + " " + cli.command + " " + shellQuote(prompt)
	return h, nil
}

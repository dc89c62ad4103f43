package forensics

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/memoryd/memoryd/internal/events"
)

// WriteSyntheticLog writes to w an exported log of n events, at least 5,
// for the replay benchmarks. It holds one task, four agents and
// note.appended events spread over many notes, and the same n always gives
// the same bytes.
func WriteSyntheticLog(w io.Writer, n int) error {
	agents := []string{"/root", "/root/builder", "/root/reviewer", "/root/tester"}
	if n < 1+len(agents) {
		return fmt.Errorf("a synthetic log has at least %d events, not %d", 1+len(agents), n)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	entropy := ulid.Monotonic(rand.NewChaCha8([32]byte{1}), 0)
	task := ulid.MustNew(ulid.Timestamp(start), entropy).String()
	versions := make([]int64, len(agents))
	pos := int64(0)
	var line []byte
	emit := func(agent int, typ string, data []byte, at time.Time) {
		pos++
		versions[agent]++
		id := ulid.MustNew(ulid.Timestamp(at), entropy)
		line = append(line[:0], `{"position":`...)
		line = strconv.AppendInt(line, pos, 10)
		line = append(line, `,"id":"`...)
		line = append(line, id.String()...)
		line = append(line, `","stream":"`...)
		line = append(line, task...)
		line = append(line, agents[agent]...)
		line = append(line, `","stream_version":`...)
		line = strconv.AppendInt(line, versions[agent], 10)
		line = append(line, `,"type":"`...)
		line = append(line, typ...)
		line = append(line, `","schema":1,"recorded_at":"`...)
		line = at.AppendFormat(line, events.TimeFormat)
		line = append(line, `","data":`...)
		line = append(line, data...)
		line = append(line, "}\n"...)
		bw.Write(line) // a write error sticks, and Flush reports it
	}
	created, err := events.MarshalData(events.TaskCreated{TaskID: task, SessionKey: "/bench/root.jsonl"})
	if err != nil {
		return err
	}
	emit(0, events.TypeTaskCreated, created, start)
	for i, a := range agents {
		reg := events.AgentRegistered{TaskID: task, Agent: a, SessionKey: fmt.Sprintf("/bench/%d.jsonl", i),
			Budget: events.Budget{ReminderRemainingPercent: 0.25, ReminderRemainingFloorTokens: 21384,
				ReminderRemainingCeilingTokens: 60000, MaxToolOutputChars: 12000, NotesMaxFileBytes: 1000000, HistoryItemPreviewChars: 400}}
		if i > 0 {
			reg.ParentAgent = "/root"
		}
		data, err := events.MarshalData(reg)
		if err != nil {
			return err
		}
		emit(i, events.TypeAgentRegistered, data, start)
	}
	var data []byte
	for i := int(pos); i < n; i++ {
		a := i % len(agents)
		data = append(data[:0], `{"task_id":"`...)
		data = append(data, task...)
		data = append(data, `","agent":"`...)
		data = append(data, agents[a]...)
		data = append(data, `","path":"log/`...)
		data = strconv.AppendInt(data, int64((i/len(agents))%2000), 10)
		data = append(data, `.md","text":"step `...)
		data = strconv.AppendInt(data, int64(i), 10)
		data = append(data, ` done\n","by":"`...)
		data = append(data, agents[a]...)
		data = append(data, `"}`...)
		if i < 100 && !json.Valid(data) {
			return fmt.Errorf("synthetic payload is not JSON: %s", data)
		}
		emit(a, events.TypeNoteAppended, data, start.Add(time.Duration(i)*time.Millisecond))
	}
	return bw.Flush()
}

package retention

import (
	"errors"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		text string
	}{
		{"12h", 12 * time.Hour, "12h"},
		{"90d", 90 * Day, "90d"},
		{"2w", 2 * Week, "2w"},
		{"090D", 90 * Day, "90d"},
		{"36500d", MaxDuration, "36500d"},
	} {
		p, err := ParseGlobal(tc.in)
		if err != nil || p.Period != tc.want || p.Text != tc.text || !p.On() {
			t.Errorf("ParseGlobal(%q) = %+v, %v; want %s %s", tc.in, p, err, tc.want, tc.text)
		}
	}
	for _, off := range []string{"", "off", "OFF", " "} {
		if p, err := ParseGlobal(off); err != nil || p.On() || p.String() != Off {
			t.Errorf("ParseGlobal(%q) = %+v, %v; want off", off, p, err)
		}
	}
	for _, bad := range []string{"d", "90", "90s", "1.5d", "-3d", "0d", "+3d", "9 d", "36501d", "99999999999999999999h", "forever", "1h30m"} {
		if p, err := ParseGlobal(bad); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseGlobal(%q) = %+v, %v; want ErrSyntax", bad, p, err)
		}
	}
	for in, want := range map[string]string{"30d": "30d", "forever": "forever", "default": "", "007w": "7w"} {
		if text, _, err := ParseTask(in); err != nil || text != want {
			t.Errorf("ParseTask(%q) = %q, %v; want %q", in, text, err, want)
		}
	}
	if _, _, err := ParseTask("off"); err == nil {
		t.Error("ParseTask(off): a task's policy is forever or default, not off")
	}
}

func TestDue(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	p, _ := ParseGlobal("90d")
	switch {
	case Due(p, t0, t0.Add(90*Day-time.Millisecond)):
		t.Error("due a millisecond early")
	case !Due(p, t0, t0.Add(90*Day)):
		t.Error("not due at its period")
	case Due(Policy{}, t0, t0.Add(MaxDuration)), Due(Policy{Forever: true, Text: Forever}, t0, t0.Add(MaxDuration)):
		t.Error("off or forever is due")
	}
	if g, src, _ := Effective("", p); g != p || src != "global" {
		t.Errorf("Effective default: %+v %s", g, src)
	}
	if own, src, _ := Effective("forever", p); !own.Forever || src != "task" {
		t.Errorf("Effective forever: %+v %s", own, src)
	}
}

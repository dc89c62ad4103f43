package inspector

import (
	"fmt"
	"html/template"
	"strings"
)

// These constants give the tokens plot's drawing area, in SVG user units.
const (
	plotW, plotH       = 900.0, 280.0
	plotLeft, plotTop  = 60.0, 24.0
	plotRight, plotBot = 120.0, 30.0
)

// plotSVG draws tokens used against log position for the timeline, with
// windows, thresholds and rollovers. Points and marks link to their events.
// It uses only presentation attributes and classes, as the CSP allows no
// inline style.
func plotSVG(tl *timeline, th thresholds, at int64) template.HTML {
	x0, x1 := float64(tl.First), float64(tl.Last)
	if x1 <= x0 {
		x1 = x0 + 1
	}
	ymax := float64(max(th.Window, th.Hard, th.Reminder))
	for _, u := range tl.Usage {
		ymax = max(ymax, float64(u.Used))
	}
	if ymax <= 0 {
		ymax = 1
	}
	ymax *= 1.05
	w, h := plotW-plotLeft-plotRight, plotH-plotTop-plotBot
	x := func(p int64) float64 { return plotLeft + (float64(p)-x0)/(x1-x0)*w }
	y := func(v int64) float64 { return plotTop + h - float64(v)/ymax*h }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="tokens-plot" class="plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="tokens used against log position">`,
		plotW, plotH, plotW, plotH)
	for i, wb := range tl.Windows {
		xa, xb := x(wb.From), x(wb.To)
		if i+1 < len(tl.Windows) {
			xb = x(tl.Windows[i+1].From)
		} else {
			xb = plotLeft + w
		}
		fmt.Fprintf(&b, `<a href="%s"><rect class="band band-%d" data-window="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`,
			template.HTMLEscapeString(string(eventHref(at, wb.From))), i%2, template.HTMLEscapeString(wb.ID), xa, plotTop, max(xb-xa, 1), h)
		fmt.Fprintf(&b, `<text class="band-label" x="%.1f" y="%.1f">%s</text></a>`, xa+3, plotTop-6, template.HTMLEscapeString(wb.ID))
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, plotLeft, plotTop+h, plotLeft+w, plotTop+h)
	fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, plotLeft, plotTop, plotLeft, plotTop+h)
	fmt.Fprintf(&b, `<text class="axis-label" x="%.1f" y="%.1f">@%d</text>`, plotLeft, plotH-8, tl.First)
	fmt.Fprintf(&b, `<text class="axis-label" x="%.1f" y="%.1f" text-anchor="end">@%d</text>`, plotLeft+w, plotH-8, tl.Last)
	fmt.Fprintf(&b, `<text class="axis-label" x="4" y="%.1f">%d</text>`, plotTop+10, int64(ymax))
	fmt.Fprintf(&b, `<text class="axis-label" x="4" y="%.1f">0</text>`, plotTop+h)
	for _, t := range []struct {
		class, name string
		v           int64
	}{{"thr-reminder", "reminder", th.Reminder}, {"thr-fallback", "fallback", th.Fallback}, {"thr-hard", "hard rollover", th.Hard}} {
		if t.v <= 0 {
			continue
		}
		fmt.Fprintf(&b, `<line class="threshold %s" data-tokens="%d" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, t.class, t.v, plotLeft, y(t.v), plotLeft+w, y(t.v))
		fmt.Fprintf(&b, `<text class="thr-label %s-label" x="%.1f" y="%.1f">%s %d</text>`, t.class, plotLeft+w+4, y(t.v)+4, t.name, t.v)
	}
	for _, r := range tl.Rollovers {
		p := r.Position
		if r.Committed > 0 {
			p = r.Committed
		}
		fmt.Fprintf(&b, `<a href="%s"><line class="mark-rollover" data-reason="%s" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"><title>rollover %s → %s (%s) @%d</title></line></a>`,
			template.HTMLEscapeString(string(eventHref(at, p))), template.HTMLEscapeString(r.Reason), x(p), plotTop, x(p), plotTop+h,
			template.HTMLEscapeString(r.PreviousWindowID), template.HTMLEscapeString(r.WindowID), template.HTMLEscapeString(r.Reason), p)
	}
	if len(tl.Usage) > 0 {
		// One line per window, as usage starts again in a new window and a
		// line across the rollover would show a fall that never happened.
		var pts []string
		win := ""
		line := func() {
			if len(pts) > 1 {
				fmt.Fprintf(&b, `<polyline class="usage" data-window="%s" points="%s"/>`, template.HTMLEscapeString(win), strings.Join(pts, " "))
			}
			pts = pts[:0]
		}
		for _, u := range tl.Usage {
			if w := windowAt(tl.Windows, u.Position); w != win {
				line()
				win = w
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(u.Position), y(u.Used)))
		}
		line()
		for _, u := range tl.Usage {
			fmt.Fprintf(&b, `<a href="%s"><circle class="usage-point" data-position="%d" data-tokens="%d" cx="%.1f" cy="%.1f" r="3"><title>%d tokens @%d</title></circle></a>`,
				template.HTMLEscapeString(string(eventHref(at, u.Position))), u.Position, u.Used, x(u.Position), y(u.Used), u.Used, u.Position)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// windowAt returns the id of the window band that holds position p, the
// last one starting at or before it.
func windowAt(bands []windowBand, p int64) string {
	id := ""
	for _, b := range bands {
		if b.From <= p {
			id = b.ID
		}
	}
	return id
}

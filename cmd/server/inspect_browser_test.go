package main

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/memoryd/memoryd/internal/browsertest"
)

// TestInspectInTheBrowser: memoryd inspect on a scenario log (a fallback
// whose checkpoint write fails twice, then a rollover), its one-time link
// opened in a real browser: the browser lands on the tasks page, logged
// in, with the log's task; the agent's timeline shows the rollover and
// the two released claims. The link opened again, in another browser
// context, shows the login page's error.
func TestInspectInTheBrowser(t *testing.T) {
	log := fxLog("fenced-checkpoint-retry")
	task := fxTask(t, log)
	base, link, stop := startInspect(t, log)

	ctx := browsertest.Tab(t)
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("browser: %s: %v", what, err)
		}
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("browser: %s: %v", expr, err)
		}
		return v
	}
	do("open the link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#tasks")))
	if loc := eval(`location.href`); loc != base+"/ui" {
		t.Errorf("the link led to %q, want %s/ui", loc, base)
	}
	if got := eval(`document.querySelector('#tasks .task').dataset.task + ' ' + document.querySelector('#tasks .agent').dataset.agent`); got != task+" /root" {
		t.Errorf("the tasks page shows %q, want task %s and /root", got, task)
	}
	do("open the timeline", chromedp.Click(chromedp.CSS(".agent-link")), chromedp.WaitVisible(chromedp.CSS("#tokens-plot")))
	if got := eval(`document.querySelector('.rollover h3').textContent.replace(/\s+/g, ' ')`); !strings.Contains(got, "fallback: w1 → w2") {
		t.Errorf("the rollover reads %q", got)
	}
	if got := eval(`String(document.querySelectorAll('.step[data-type="lifecycle.claim_released"]').length)`); got != "2" {
		t.Errorf("%s released claims shown, want 2", got)
	}
	browsertest.Screenshot(t, ctx, "inspect-timeline")

	again := browsertest.Tab(t) // a browser context of its own: no cookie
	if err := chromedp.Do(again, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#link-only"))); err != nil {
		t.Fatalf("the link opened again: %v", err)
	}
	spent, err := chromedp.Run(again, chromedp.TextContent(chromedp.CSS("#main")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(spent, "used already") || !strings.Contains(spent, "run it again") {
		t.Errorf("the spent link's page says %q, want that it was used and how to get another", spent)
	}
	if err := stop(); err != nil {
		t.Errorf("inspect stopped with %v", err)
	}
}

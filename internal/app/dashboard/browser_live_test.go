package dashboard

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/reinception/rein/internal/testutil"
)

// TestBrowserLiveRun runs the browser checks against a running rein (a demo
// run): REIN_DASHBOARD_URL=http://127.0.0.1:8080 go test -run
// TestBrowserLiveRun ./internal/dashboard/. The overview must come to equal
// /metrics (the numbers move while the demo runs, so it waits for the page's
// next refresh), and one of the recent escalations or reports must open a
// conversation with a planted thought.
func TestBrowserLiveRun(t *testing.T) {
	base := strings.TrimRight(os.Getenv("REIN_DASHBOARD_URL"), "/")
	if base == "" {
		t.Skip("REIN_DASHBOARD_URL not set (the URL of a running rein's HTTP port)")
	}
	browser, stop := startChromium(t)
	defer stop()
	run := func(timeout time.Duration, fn func(ctx context.Context) error) error {
		ctx, cancel := context.WithTimeout(browser, timeout)
		defer cancel()
		return fn(ctx)
	}
	if err := run(60*time.Second, func(ctx context.Context) error {
		return chromedp.Do(ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="activation-rate"]`)))
	}); err != nil {
		t.Fatalf("load overview: %v", err)
	}
	var page pageState
	var want shown
	testutil.CheckFor(t, 2*time.Minute, "the overview never matched /metrics", func() bool {
		want = fromMetrics(t, base)
		if err := run(30*time.Second, func(ctx context.Context) (err error) {
			page, err = chromedp.Run(ctx, chromedp.Evaluate[pageState](readOverview))
			return err
		}); err != nil {
			t.Fatalf("read overview: %v", err)
		}
		if !reflect.DeepEqual(page.shown, want) {
			t.Logf("not yet equal\n page    %+v\n metrics %+v", page.shown, want)
			return false
		}
		return true
	})
	t.Logf("overview matches /metrics: activation rate %s of %s decisions", want.Rate, want.Decisions)

	var links []string
	if err := run(30*time.Second, func(ctx context.Context) (err error) {
		links, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](
			`[...document.querySelectorAll('ol[data-testid="recent"] a.conversation-link')].map((a) => a.getAttribute("href"))`))
		return err
	}); err != nil || len(links) == 0 {
		t.Fatalf("no recent escalations or reports to open (err %v)", err)
	}
	for i, href := range links {
		err := run(60*time.Second, func(ctx context.Context) error {
			if i == 0 {
				_, err := chromedp.Run(ctx, chromedp.WaitEvent(cdppage.LoadEventFired, nil,
					chromedp.Click(chromedp.CSS(`ol[data-testid="recent"] a.conversation-link`))))
				if err != nil {
					return err
				}
				return chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="timeline"]`)))
			}
			return chromedp.Do(ctx, chromedp.Navigate(base+href), chromedp.WaitVisible(chromedp.CSS(`[data-testid="timeline"]`)))
		})
		if err != nil {
			t.Fatalf("open %s: %v", href, err)
		}
		var thoughts []string
		if err := run(30*time.Second, func(ctx context.Context) (err error) {
			thoughts, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](
				`[...document.querySelectorAll("li.event.planted-thought .text")].map((e) => e.textContent)`))
			return err
		}); err != nil {
			t.Fatalf("read %s: %v", href, err)
		}
		if len(thoughts) > 0 && thoughts[0] != "" {
			t.Logf("%s: planted thought %q", href, thoughts[0])
			return
		}
	}
	t.Fatalf("none of the %d recent conversations shows a planted thought", len(links))
}

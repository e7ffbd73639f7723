package browsertest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// nodes4 is a fake cluster of four 8-cpu nodes.
const nodes4 = `[{"name": "node", "count": 4, "resources": {"cpu": "8", "memory": "32Gi"}}]`

// overview is the part of GET /v1/overview the tests read.
type overview struct {
	Queues []struct {
		Name   string `json:"name"`
		Status struct {
			Share, FairShare, AdjustedFairShare float64
			Running                             int
		} `json:"status"`
	} `json:"queues"`
	Cycles uint64 `json:"cycles"`
}

// treeService is a service with a group of two queues and a queue at the
// root, each with jobs running on a fake cluster for an hour.
func treeService(t *testing.T) *service {
	s := serve(t)
	s.call(http.MethodPost, "/v1/groups", `{"name": "research"}`, nil)
	for _, q := range []string{`{"name": "alpha", "parent": "research"}`, `{"name": "beta", "parent": "research", "priorityFactor": 2}`, `{"name": "gamma"}`} {
		s.call(http.MethodPost, "/v1/queues", q, nil)
	}
	s.executor("c1", nodes4, "")
	for _, q := range []string{"alpha", "beta", "gamma"} {
		s.submit(fmt.Sprintf(`{"queue": %q, "jobSet": "train", "jobs": [{"count": 40, "requests": {"cpu": "1"}, "runtime": "1h"}]}`, q))
	}
	eventually(t, 20*time.Second, "every queue runs jobs", func() bool {
		var ov overview
		s.call(http.MethodGet, "/v1/overview", "", &ov)
		running := 0
		for _, q := range ov.Queues {
			running += q.Status.Running
		}
		return running == 32
	})
	return s
}

func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

func TestOverviewListsTheQueuesWithTheirShares(t *testing.T) {
	s := treeService(t)
	ctx := browser(t)
	var ov overview
	s.call(http.MethodGet, "/v1/overview", "", &ov)
	run(t, ctx, chromedp.Navigate(s.url+"/ui/"), chromedp.WaitVisible(css(`#queues tbody tr`)))
	rows := eval[[][]string](t, ctx, `[...document.querySelectorAll('#queues tbody tr')].map(r => [...r.cells].map(c => c.textContent.trim()))`)
	byName := map[string][]string{}
	for _, r := range rows {
		byName[strings.TrimLeft(strings.TrimPrefix(strings.TrimSpace(r[0]), "▾ "), "\u2003 ")] = r
	}
	for _, q := range ov.Queues {
		r, ok := byName[q.Name]
		if !ok {
			t.Fatalf("queue %s is not on the overview: %q", q.Name, rows)
		}
		if want := []string{pct(q.Status.Share), pct(q.Status.FairShare), pct(q.Status.AdjustedFairShare)}; !slices.Equal(r[1:4], want) {
			t.Errorf("queue %s shows shares %q, the API says %q", q.Name, r[1:4], want)
		}
	}
	if _, ok := byName["research"]; !ok {
		t.Errorf("the group is not on the overview: %q", rows)
	}
	// beta's priority factor 2 halves its claim: its fair share is below
	// alpha's, and the page says so.
	if byName["alpha"][2] == byName["beta"][2] {
		t.Errorf("alpha and beta show the same fair share %s despite beta's priority factor", byName["alpha"][2])
	}
	screenshot(t, ctx, "overview")

	// The other pages of the same service, each with its data.
	// A job set whose jobs all ended is listed too, marked ended.
	ended := s.submit(`{"queue": "alpha", "jobSet": "eval", "jobs": [{"count": 2, "requests": {"cpu": "1"}, "runtime": "1h"}]}`)
	cancel, _ := json.Marshal(map[string]any{"jobIds": ended})
	s.call(http.MethodPost, "/v1/jobs/cancel", string(cancel), nil)
	run(t, ctx, chromedp.Navigate(s.url+"/ui/queues/alpha"), chromedp.WaitVisible(css(`#jobsets tbody tr`)))
	sets := eval[[][]string](t, ctx, `[...document.querySelectorAll('#jobsets tbody tr')].map(r => [...r.cells].map(c => c.textContent.trim()))`)
	for i := range sets {
		if sets[i][0] == "train" {
			sets[i] = sets[i][:2] // its counts change as it runs
		}
	}
	if want := [][]string{{"eval", "ended", "—", "—", "—"}, {"train", "active"}}; !slices.EqualFunc(sets, want, slices.Equal[[]string]) {
		t.Errorf("queue alpha's job sets: %q, want %q", sets, want)
	}
	screenshot(t, ctx, "queue")
	run(t, ctx, chromedp.Navigate(s.url+"/ui/clusters"), chromedp.WaitVisible(css(`#clusters tbody tr`)), chromedp.WaitVisible(css(`table.nodes tbody tr`)))
	if got := texts(t, ctx, `table.nodes tbody tr td:first-child`); len(got) != 4 {
		t.Errorf("cluster c1's nodes: %q", got)
	}
	screenshot(t, ctx, "clusters")
	run(t, ctx, chromedp.Navigate(s.url+"/ui/cycles"), chromedp.WaitVisible(css(`#cycles tbody tr`)))
	screenshot(t, ctx, "cycles")
	// A path escaping bytes that are not UTF-8 is no page, said so (the
	// route threw before, leaving the page blank).
	run(t, ctx, chromedp.Navigate(s.url+"/ui/queues/%FF"), chromedp.WaitVisible(css(`#main .alert`)))
	if got := texts(t, ctx, `#main .alert`); len(got) != 1 || !strings.Contains(got[0], "No such page") {
		t.Errorf("a malformed path shows %q", got)
	}
}

func TestJobSetPagePagesThroughTenThousandJobs(t *testing.T) {
	s := serve(t)
	s.call(http.MethodPost, "/v1/queues", `{"name": "bulk"}`, nil)
	ids := s.submit(`{"queue": "bulk", "jobSet": "big", "jobs": [
		{"count": 4000, "requests": {"cpu": "1"}, "priority": 2},
		{"count": 3000, "requests": {"cpu": "1"}},
		{"count": 3000, "requests": {"cpu": "1"}, "priority": 1}]}`)
	if len(ids) != 10000 {
		t.Fatalf("submitted %d jobs", len(ids))
	}
	ctx := browser(t)
	run(t, ctx, chromedp.Navigate(s.url+"/ui/jobsets/bulk/big"), chromedp.WaitVisible(css(`#jobs tbody tr`)))
	if got := texts(t, ctx, `#count-queued`); !slices.Equal(got, []string{"10,000"}) {
		t.Errorf("queued count %q, want 10,000", got)
	}
	screenshot(t, ctx, "jobset")
	if heads := texts(t, ctx, `#jobs thead th`); slices.Contains(heads, "Finished") {
		t.Errorf("live jobs' columns %q have Finished", heads)
	}
	var seen []string
	for page := 1; ; page++ {
		run(t, ctx, waitJS(fmt.Sprintf(`document.getElementById('page-info').textContent.startsWith('page %d:')`, page)))
		rows := texts(t, ctx, `#jobs tbody tr td:first-child`)
		if len(rows) != 100 {
			t.Fatalf("page %d has %d rows", page, len(rows))
		}
		seen = append(seen, rows...)
		if eval[bool](t, ctx, `document.getElementById('next').disabled`) {
			break
		}
		if page%2 == 0 { // every other page by the keyboard
			run(t, ctx, chromedp.KeyEvent("n"))
		} else {
			run(t, ctx, chromedp.Click(css(`#next`)))
		}
		if page > 200 {
			t.Fatal("more than 200 pages")
		}
	}
	// Every job once, in submit order (one submission: by id).
	want := slices.Clone(ids)
	slices.Sort(want)
	if !slices.Equal(seen, want) {
		t.Fatalf("the pages hold %d jobs, not the 10,000 submitted in submit order", len(seen))
	}
	// Previous goes back a page.
	run(t, ctx, chromedp.Click(css(`#prev`)), waitJS(`document.getElementById('page-info').textContent.startsWith('page 99:')`))
	if got := texts(t, ctx, `#jobs tbody tr td:first-child`); got[0] != want[9800] {
		t.Errorf("page 99 starts with %s, want %s", got[0], want[9800])
	}
	// By priority: the 3,000 jobs of priority 0 first, then priority 1.
	run(t, ctx, do(`(() => { const s = document.getElementById('sort'); s.value = 'priority'; s.dispatchEvent(new Event('change')); })()`),
		waitJS(`location.search.includes('sort=priority') && document.getElementById('page-info').textContent.startsWith('page 1:')`),
		waitJS(`[...document.querySelectorAll('#jobs tbody tr td:nth-child(3)')].every(c => c.textContent === '0')`))
	for page := 2; page <= 31; page++ {
		run(t, ctx, chromedp.Click(css(`#next`)), waitJS(fmt.Sprintf(`document.getElementById('page-info').textContent.startsWith('page %d:')`, page)))
	}
	if got := texts(t, ctx, `#jobs tbody tr td:nth-child(3)`); got[0] != "1" || got[99] != "1" {
		t.Errorf("page 31 by priority shows priorities %s…%s, want 1", got[0], got[99])
	}
	// The state filter: no job runs.
	run(t, ctx, do(`(() => { const s = document.getElementById('state'); s.value = 'running'; s.dispatchEvent(new Event('change')); })()`),
		waitJS(`document.getElementById('page-info').textContent === 'no jobs'`))
	// Keyboard: j moves the selection, Enter opens the job.
	run(t, ctx, chromedp.Navigate(s.url+"/ui/jobsets/bulk/big"), chromedp.WaitVisible(css(`#jobs tbody tr`)),
		chromedp.KeyEvent("j"), chromedp.KeyEvent("j"), waitJS(`document.querySelector('#jobs tbody tr.selected').sectionRowIndex === 1`),
		chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(css(`#job-facts`)))
	if got := eval[string](t, ctx, `location.pathname`); got != "/ui/jobs/"+want[1] {
		t.Errorf("j j Enter opened %s, want job %s", got, want[1])
	}
	// Ended jobs: 150 cancelled, listed by submit time (sort disabled)
	// on two pages, each row marked cancelled.
	cancel, _ := json.Marshal(map[string]any{"jobIds": want[:150]})
	s.call(http.MethodPost, "/v1/jobs/cancel", string(cancel), nil)
	run(t, ctx, chromedp.Navigate(s.url+"/ui/jobsets/bulk/big"), chromedp.WaitVisible(css(`#jobs tbody tr`)),
		do(`(() => { const s = document.getElementById('state'); s.value = 'cancelled'; s.dispatchEvent(new Event('change')); })()`),
		waitJS(`location.search.includes('state=cancelled') && document.getElementById('page-info').textContent.startsWith('page 1: jobs 1–100')`))
	ended := map[string]string{}
	for _, st := range []string{"succeeded", "failed", "cancelled", "preempted"} {
		ended[st] = strings.Join(texts(t, ctx, "#count-"+st), "")
	}
	if want := map[string]string{"succeeded": "0", "failed": "0", "cancelled": "150", "preempted": "0"}; !maps.Equal(ended, want) {
		t.Errorf("the ended count cards show %v, want %v", ended, want)
	}
	if got := texts(t, ctx, `#count-queued`); !slices.Equal(got, []string{"9,850"}) {
		t.Errorf("queued count %q after 150 cancelled, want 9,850", got)
	}
	if !eval[bool](t, ctx, `document.getElementById('sort').disabled && document.getElementById('sort').value === 'submitted'`) {
		t.Error("the sort stays open for ended jobs, which are listed by submit time only")
	}
	cancelled := texts(t, ctx, `#jobs tbody tr td:first-child`)
	// Each ended row shows when its job ended, as the API says.
	var endedPage struct {
		Jobs []struct {
			ID       string     `json:"id"`
			Finished *time.Time `json:"finished"`
		} `json:"jobs"`
	}
	s.call(http.MethodGet, "/v1/queues/bulk/jobsets/big/jobs?state=cancelled&limit=100", "", &endedPage)
	if heads := texts(t, ctx, `#jobs thead th`); !slices.Contains(heads, "Finished") || heads[4] != "Finished" {
		t.Errorf("the ended jobs' columns are %q, want Finished after Submitted", heads)
	}
	finished := texts(t, ctx, `#jobs tbody tr td:nth-child(5)`)
	for i, j := range endedPage.Jobs {
		if j.Finished == nil {
			t.Fatalf("the API gives no finished time for cancelled job %s", j.ID)
		}
		if want := j.Finished.UTC().Format("2006-01-02 15:04:05Z"); i >= len(finished) || finished[i] != want {
			t.Fatalf("row %d (%s) shows finished %q, want %q", i, j.ID, finished[min(i, len(finished)-1)], want)
		}
	}
	run(t, ctx, chromedp.Click(css(`#next`)), waitJS(`document.getElementById('page-info').textContent.startsWith('page 2: jobs 101–150')`))
	cancelled = append(cancelled, texts(t, ctx, `#jobs tbody tr td:first-child`)...)
	if !slices.Equal(cancelled, want[:150]) {
		t.Errorf("the cancelled pages list %d jobs, not the 150 cancelled in submit order", len(cancelled))
	}
	if got := texts(t, ctx, `#jobs tbody tr td:nth-child(2)`); got[0] != "cancelled" {
		t.Errorf("a cancelled job's state shows %q", got[0])
	}
	screenshot(t, ctx, "jobset-ended")
}

func TestJobPageShowsANewEventWithinTwoSecondsWithoutReload(t *testing.T) {
	s := serve(t)
	s.call(http.MethodPost, "/v1/queues", `{"name": "alpha"}`, nil)
	id := s.submit(`{"queue": "alpha", "jobSet": "s", "jobs": [{"requests": {"cpu": "1"}, "runtime": "1h"}]}`)[0]
	ctx := browser(t)
	run(t, ctx, chromedp.Navigate(s.url+"/ui/jobs/"+id), chromedp.WaitVisible(css(`#events tbody tr[data-type="submitted"]`)),
		do(`window.notReloaded = true`))
	if got := texts(t, ctx, `#job-state`); !slices.Equal(got, []string{"queued"}) {
		t.Errorf("state %q, want queued", got)
	}
	// The long form of status -v: no cluster has reported, so no cycle
	// has run; the job's class and place in its queue are known.
	if got := texts(t, ctx, `#explain th`); !slices.Contains(got, "priority") || !slices.Contains(got, "place") {
		t.Errorf("the explanation's rows: %q", got)
	}
	// Now a cluster comes: the job is leased, then the executor reports
	// it running. The page shows the running event within 2 s of the
	// report being stored.
	s.executor("c1", nodes4, "")
	var stored time.Time
	eventually(t, 20*time.Second, "the executor reports the job running", func() bool {
		var st struct {
			Jobs []struct{ State string } `json:"jobs"`
		}
		s.call(http.MethodGet, "/v1/jobs?id="+id, "", &st)
		if st.Jobs[0].State == "running" {
			stored = time.Now()
			return true
		}
		return false
	})
	run(t, ctx, chromedp.Poll[chromedp.Void](`document.querySelector('#events tbody tr[data-type="running"]') !== null`,
		chromedp.WithPollingTimeout(2*time.Second), chromedp.WithPollingInterval(10*time.Millisecond)))
	shown := time.Since(stored)
	t.Logf("the running event was on the page %s after the test saw it stored", shown.Round(time.Millisecond))
	run(t, ctx, waitJS(`document.getElementById('job-state').textContent === 'running'`))
	if !eval[bool](t, ctx, `window.notReloaded === true`) {
		t.Error("the page was reloaded")
	}
	if got := texts(t, ctx, `#events tbody tr td:nth-child(3)`); !slices.Equal(got, []string{"submitted", "leased", "running"}) {
		t.Errorf("events %q", got)
	}
	screenshot(t, ctx, "job")
}

func TestTokenWithoutWatchRightsSeesARefusalAndNoData(t *testing.T) {
	auth := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(auth, []byte(`{"tokens": [
		{"token": "admin-secret", "principal": "admin", "admin": true},
		{"token": "exec-secret", "principal": "exec", "executor": ["c1"]},
		{"token": "alpha-secret", "principal": "alice", "watch": ["alpha"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serve(t, "-auth", auth)
	s.token = "admin-secret"
	for _, q := range []string{"alpha", "beta"} {
		s.call(http.MethodPost, "/v1/queues", fmt.Sprintf(`{"name": %q}`, q), nil)
	}
	ctx := browser(t)
	// No token: the page asks for one.
	run(t, ctx, chromedp.Navigate(s.url+"/ui/"), chromedp.WaitVisible(css(`#login`)))
	screenshot(t, ctx, "token")
	// The executor's token may not read queues: a refusal, no data.
	run(t, ctx, chromedp.SendKeys(css(`#token`), "exec-secret"), chromedp.Click(css(`#login button[type=submit]`)),
		chromedp.WaitVisible(css(`#refusal`)))
	refusal := texts(t, ctx, `#refusal`)[0]
	if !strings.Contains(refusal, "may not") || !strings.Contains(refusal, "403") {
		t.Errorf("refusal %q does not say the token may not", refusal)
	}
	main := eval[string](t, ctx, `document.getElementById('main').textContent`)
	if strings.Contains(main, "alpha") || strings.Contains(main, "beta") || len(texts(t, ctx, `#queues`)) > 0 {
		t.Errorf("the refused page shows data: %q", main)
	}
	screenshot(t, ctx, "refused")
	// The token is the tab's: in sessionStorage, never localStorage.
	stored := eval[struct {
		Session string
		Local   int
	}](t, ctx, `({Session: sessionStorage.getItem('flotilla.token'), Local: localStorage.length})`)
	if stored.Session != "exec-secret" || stored.Local != 0 {
		t.Errorf("token kept as %+v", stored)
	}
	// A token that watches alpha sees alpha, not beta, and is refused beta.
	run(t, ctx, do(`sessionStorage.setItem('flotilla.token', 'alpha-secret')`),
		chromedp.Navigate(s.url+"/ui/"), chromedp.WaitVisible(css(`#queues tbody tr`)))
	if got := texts(t, ctx, `#queues tbody tr td:first-child`); !slices.Equal(got, []string{"alpha"}) {
		t.Errorf("alice sees queues %q, want alpha only", got)
	}
	run(t, ctx, chromedp.Navigate(s.url+"/ui/queues/beta"), chromedp.WaitVisible(css(`#refusal`)))
	if got := texts(t, ctx, `#refusal`)[0]; !strings.Contains(got, "may not read queue beta") {
		t.Errorf("beta's refusal: %q", got)
	}
	// An unknown token is asked for again, saying why.
	run(t, ctx, do(`sessionStorage.setItem('flotilla.token', 'wrong')`),
		chromedp.Navigate(s.url+"/ui/clusters"), chromedp.WaitVisible(css(`#login #refusal`)))
}

// TestTwoPoolsShowOnTheClustersOverviewAndCyclesPages: clusters in pools
// cpu and gpu; the clusters page names each one's pool, the overview
// shows each queue's and the group's share per pool as the API gives
// them, and the cycles page names the pool of each queue's leases.
func TestTwoPoolsShowOnTheClustersOverviewAndCyclesPages(t *testing.T) {
	s := serve(t)
	s.call(http.MethodPost, "/v1/groups", `{"name": "research"}`, nil)
	for _, q := range []string{`{"name": "alpha", "parent": "research"}`, `{"name": "beta"}`} {
		s.call(http.MethodPost, "/v1/queues", q, nil)
	}
	s.executor("c-cpu", nodes4, "", "-pool", "cpu")
	s.executor("c-gpu", `[{"name": "gpu", "count": 2, "resources": {"cpu": "8", "memory": "32Gi"}}]`, "", "-pool", "gpu")
	s.submit(`{"queue": "alpha", "jobSet": "train", "jobs": [{"count": 8, "requests": {"cpu": "1"}, "runtime": "1h", "pools": ["cpu"]},
		{"count": 4, "requests": {"cpu": "1"}, "runtime": "1h", "pools": ["gpu"]}]}`)
	s.submit(`{"queue": "beta", "jobSet": "eval", "jobs": [{"count": 4, "requests": {"cpu": "1"}, "runtime": "1h", "pools": ["gpu"]}]}`)
	type shares struct {
		Name   string `json:"name"`
		Status struct {
			Running int `json:"running"`
			Pools   []struct {
				Pool              string  `json:"pool"`
				Share             float64 `json:"share"`
				FairShare         float64 `json:"fairShare"`
				AdjustedFairShare float64 `json:"adjustedFairShare"`
			} `json:"pools"`
		} `json:"status"`
	}
	var ov struct {
		Queues []shares `json:"queues"`
		Groups []shares `json:"groups"`
	}
	eventually(t, 20*time.Second, "16 jobs run in the two pools", func() bool {
		s.call(http.MethodGet, "/v1/overview", "", &ov)
		n := 0
		for _, q := range ov.Queues {
			n += q.Status.Running
		}
		return n == 16
	})
	ctx := browser(t)
	run(t, ctx, chromedp.Navigate(s.url+"/ui/clusters"), chromedp.WaitVisible(css(`#clusters tbody tr`)))
	rows := eval[[][]string](t, ctx, `[...document.querySelectorAll('#clusters tbody tr')].map(r => [...r.cells].slice(0, 2).map(c => c.textContent.trim()))`)
	if want := [][]string{{"c-cpu", "cpu"}, {"c-gpu", "gpu"}}; !slices.EqualFunc(rows, want, slices.Equal[[]string]) {
		t.Errorf("clusters and pools %q, want %q", rows, want)
	}
	screenshot(t, ctx, "clusters-pools")
	s.call(http.MethodGet, "/v1/overview", "", &ov)
	run(t, ctx, chromedp.Navigate(s.url+"/ui/"), chromedp.WaitVisible(css(`#queues tbody tr .pools`)))
	lines := eval[map[string][]string](t, ctx, `Object.fromEntries([...document.querySelectorAll('#queues tbody tr')].map(r =>
		[r.cells[0].textContent.replace(/^[\u2003▾ ]+/, '').trim(), [...r.querySelectorAll('.pool-line')].map(l => l.textContent.trim())]))`)
	for _, n := range append(ov.Queues, ov.Groups...) {
		var want []string
		for _, p := range n.Status.Pools {
			want = append(want, fmt.Sprintf("%s %s / %s / %s", p.Pool, pct(p.Share), pct(p.FairShare), pct(p.AdjustedFairShare)))
		}
		if len(want) != 2 {
			t.Errorf("%s: the API gives %d pools' shares, want 2 (cpu, gpu)", n.Name, len(want))
		}
		if !slices.Equal(lines[n.Name], want) {
			t.Errorf("%s shows per pool %q, the API says %q", n.Name, lines[n.Name], want)
		}
	}
	// The last hour per pool: a sparkline per pool line, in its order.
	sparks := eval[map[string][]string](t, ctx, `Object.fromEntries([...document.querySelectorAll('#queues tbody tr')].map(r =>
		[r.cells[0].textContent.replace(/^[\u2003▾ ]+/, '').trim(), [...r.querySelectorAll('.pool-spark')].map(l => l.dataset.pool + ":" + (l.querySelector('svg.spark') ? "spark" : ""))]))`)
	for _, n := range append(ov.Queues, ov.Groups...) {
		if want := []string{"cpu:spark", "gpu:spark"}; !slices.Equal(sparks[n.Name], want) {
			t.Errorf("%s shows the last hour per pool %q, want %q", n.Name, sparks[n.Name], want)
		}
	}
	screenshot(t, ctx, "overview-pools")
	// A lease in each queue and pool now, so that the cycles page's last
	// 50 cycles (10 s) hold them.
	s.submit(`{"queue": "alpha", "jobSet": "train", "jobs": [{"requests": {"cpu": "1"}, "runtime": "1h", "pools": ["cpu"]},
		{"requests": {"cpu": "1"}, "runtime": "1h", "pools": ["gpu"]}]}`)
	s.submit(`{"queue": "beta", "jobSet": "eval", "jobs": [{"requests": {"cpu": "1"}, "runtime": "1h", "pools": ["gpu"]}]}`)
	eventually(t, 5*time.Second, "19 jobs run", func() bool {
		s.call(http.MethodGet, "/v1/overview", "", &ov)
		n := 0
		for _, q := range ov.Queues {
			n += q.Status.Running
		}
		return n == 19
	})
	run(t, ctx, chromedp.Navigate(s.url+"/ui/cycles"), chromedp.WaitVisible(css(`#cycles tbody tr`)))
	all := strings.Join(texts(t, ctx, `#cycles tbody tr td:last-child`), " ")
	for _, p := range []string{"alpha (cpu)", "alpha (gpu)", "beta (gpu)"} {
		if !strings.Contains(all, p) {
			t.Errorf("the cycles page never names %s's leases: %q", p, all)
		}
	}
}

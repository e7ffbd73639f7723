package backendtest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
	submitrules "github.com/flotilla-sched/flotilla/submit"
)

// fixedClock is the service's clock in the names rule: base().
type fixedClock struct{}

func (fixedClock) Now() time.Time { return base() }

// textOf is multi-byte UTF-8 text of exactly n bytes ("é𝄞x" repeated,
// cut at a character), so that a backend counting characters, not bytes,
// or mangling non-ASCII text, is seen.
func textOf(n int) string {
	var b strings.Builder
	for b.Len() < n {
		for _, r := range "é𝄞x" {
			if b.Len()+len(string(r)) <= n {
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

// namesAtTheirLimits: the service over the backend stores names and ids
// at their limits (submit's names.go) whole, the backend giving them back
// byte for byte, and refuses one byte more (and a name of 3,000 bytes,
// past PostgreSQL's b-tree key size) as a *flotilla.FieldError naming the
// field, storing nothing: the same refusals on every backend, none of them
// the backend's own error.
func namesAtTheirLimits(t checker, b backend.Backend) {
	t.Helper()
	ctx := context.Background()
	n := 0
	srv, err := server.New(ctx, server.Config{
		Scheduler: scheduler.DefaultConfig(Schema()), Backend: b, Clock: fixedClock{},
		NewID: func() string { n++; return "job-" + strconv.Itoa(n) },
	})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	name := textOf(submitrules.MaxNameBytes)
	refused := func(what, field string, err error) {
		t.Helper()
		var fe *flotilla.FieldError
		ps := flotilla.Problems(err)
		if len(ps) != 1 || !errors.As(ps[0], &fe) || !errors.Is(fe, flotilla.ErrOutOfRange) {
			t.Fatalf("%s: want one out-of-range *flotilla.FieldError, got %v", what, err)
		}
		if !strings.HasPrefix(fe.Field, field) || len(fe.Field) > len(field)+100 || len(fe.Value) > 100 {
			t.Errorf("%s: the problem names field %.120q, value %.120q; want field %q, both short", what, fe.Field, fe.Value, field)
		}
	}

	// Queues.
	if err := srv.CreateQueue(ctx, flotilla.Queue{Name: name}); err != nil {
		t.Fatalf("a queue name of %d bytes: %v", len(name), err)
	}
	for _, long := range []string{textOf(submitrules.MaxNameBytes + 1), textOf(3000)} {
		refused("a queue name of "+strconv.Itoa(len(long))+" bytes", `queue "`, srv.CreateQueue(ctx, flotilla.Queue{Name: long}))
	}
	qs, err := b.ListQueues(ctx)
	if err != nil || len(qs) != 1 || qs[0].Name != name {
		t.Fatalf("stored queues: want only the %d-byte one, got %d (%v)", len(name), len(qs), err)
	}

	// Submissions: job set, client id (with count expansion), gang id, a
	// node selector's key and value.
	label := textOf(submitrules.MaxLabelValueBytes)
	file := func(set, clientID string) []byte {
		return []byte(`{"queue": ` + strconv.Quote(name) + `, "jobSet": ` + strconv.Quote(set) + `, "jobs": [{"count": 2,
			"requests": {"cpu": "1"}, "clientId": ` + strconv.Quote(clientID) + `,
			"gang": {"id": ` + strconv.Quote(name) + `, "cardinality": 2, "nodeUniformityLabel": ` + strconv.Quote(label) + `},
			"nodeSelector": {` + strconv.Quote(label) + `: ` + strconv.Quote(label) + `}}]}`)
	}
	clientID := textOf(submitrules.MaxClientIDBytes)
	ids, err := srv.SubmitJSON(ctx, file(name, clientID))
	if err != nil || len(ids) != 2 {
		t.Fatalf("a submission at every limit: %v", err)
	}
	for _, long := range []string{textOf(submitrules.MaxNameBytes + 1), textOf(3000)} {
		_, err := srv.SubmitJSON(ctx, file(long, "other"))
		refused("a job set name of "+strconv.Itoa(len(long))+" bytes", "jobSet", err)
	}
	for _, long := range []string{textOf(submitrules.MaxClientIDBytes + 1), textOf(3000)} {
		_, err := srv.SubmitJSON(ctx, file(name, long))
		refused("a client id of "+strconv.Itoa(len(long))+" bytes", "jobs[0].clientId", err)
	}
	evs, err := b.Events(ctx, name, name, 0, 0)
	if err != nil || len(evs) != 2 {
		t.Fatalf("the job set's events: want the 2 submitted, got %d (%v)", len(evs), err)
	}
	for k, e := range evs {
		if e.Queue != name || e.JobSet != name {
			t.Errorf("event %d: queue and job set not stored whole (%d and %d bytes)", k, len(e.Queue), len(e.JobSet))
		}
		rec, err := b.Job(ctx, e.Job)
		if err != nil {
			t.Fatalf("job %s: %v", e.Job, err)
		}
		if want := clientID + "-" + strconv.Itoa(k); rec.Spec.ClientID != want || rec.Spec.Job.Gang.ID != name || rec.Spec.Job.NodeSelector[label] != label {
			t.Errorf("job %s: client id, gang id or node selector not stored whole", e.Job)
		}
		if id, err := b.JobByClientID(ctx, name, clientID+"-"+strconv.Itoa(k)); err != nil || id != e.Job {
			t.Errorf("job %s by its %d-byte client id: %q, %v", e.Job, len(clientID)+2, id, err)
		}
	}

	// A cluster and its node.
	node := flotilla.Node{Name: name, Labels: map[string]string{label: label}, Total: Schema().MustParse(map[string]string{"cpu": "4"})}
	if _, err := srv.Report(ctx, &server.Report{Cluster: name, Nodes: []flotilla.Node{node}}); err != nil {
		t.Fatalf("a cluster and node named with %d bytes: %v", len(name), err)
	}
	for _, long := range []string{textOf(submitrules.MaxNameBytes + 1), textOf(3000)} {
		_, err := srv.Report(ctx, &server.Report{Cluster: long, Nodes: []flotilla.Node{node}})
		refused("a cluster name of "+strconv.Itoa(len(long))+" bytes", "cluster", err)
		other := node
		other.Name = long
		_, err = srv.Report(ctx, &server.Report{Cluster: "c2", Nodes: []flotilla.Node{other}})
		refused("a node name of "+strconv.Itoa(len(long))+" bytes", "nodes[0].name", err)
	}
	exs, err := b.ListExecutors(ctx)
	if err != nil || len(exs) != 1 || exs[0].Cluster != name || len(exs[0].Nodes) != 1 || exs[0].Nodes[0].Name != name {
		t.Fatalf("stored executors: want only the %d-byte cluster and its node, got %d (%v)", len(name), len(exs), err)
	}

	// A cycle leases the gang there: the leased events name both whole.
	if _, err := srv.Cycle(ctx); err != nil {
		t.Fatalf("cycle: %v", err)
	}
	evs, err = b.Events(ctx, name, name, 3, 0)
	if err != nil || len(evs) != 2 {
		t.Fatalf("the leased events: want 2, got %d (%v)", len(evs), err)
	}
	for _, e := range evs {
		if e.Type != events.Leased || e.Cluster != name || e.Node != name {
			t.Errorf("event %d: want leased on the %d-byte cluster and node, got %s (%d and %d bytes)", e.Seq, len(name), e.Type, len(e.Cluster), len(e.Node))
		}
	}
}

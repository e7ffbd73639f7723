package backend

import (
	"context"
	"errors"

	"github.com/flotilla-sched/flotilla"
)

// CordonKind says what a Cordon is about: a queue or a cluster.
type CordonKind string

// The kinds of Cordon.
const (
	// CordonQueue: the queue's queued jobs are not leased (its running
	// ones go on).
	CordonQueue CordonKind = "queue"
	// CordonCluster: no new leases go to the cluster (its running jobs go
	// on).
	CordonCluster CordonKind = "cluster"
)

// Cordon names a queue or a cluster an operator cordoned.
type Cordon struct {
	Kind CordonKind
	Name string
}

// Check reports a cordon of no known kind or without a name, each a
// *flotilla.FieldError.
func (c Cordon) Check() error {
	var errs []error
	if c.Kind != CordonQueue && c.Kind != CordonCluster {
		errs = append(errs, flotilla.Errorf("cordon.kind", string(c.Kind), flotilla.ErrMalformed, "want queue or cluster"))
	}
	if c.Name == "" {
		errs = append(errs, flotilla.Errorf("cordon.name", "", flotilla.ErrRequired, ""))
	}
	return errors.Join(errs...)
}

// Cordons stores which queues and clusters are cordoned (docs/operator-commands.md's
// cordon and uncordon), so that a restart keeps them. The backend does
// not check that the queue or cluster exists: the service does.
type Cordons interface {
	// PutCordon cordons c (on) or uncordons it (!on); doing what is done
	// already changes nothing and is no error. Bad input (Cordon.Check)
	// changes nothing.
	PutCordon(ctx context.Context, c Cordon, on bool) error
	// ListCordons returns every cordon, sorted by kind, then name.
	ListCordons(ctx context.Context) ([]Cordon, error)
}

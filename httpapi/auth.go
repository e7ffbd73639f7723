package httpapi

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
)

// AuthFile is the auth file of `serve -auth`: one entry per token.
type AuthFile struct {
	Tokens []TokenEntry `json:"tokens"`
}

// TokenEntry gives one token's principal its rights. A list holding "*"
// means every queue (or cluster). The rights, as the README's rights table
// gives them:
//
//   - submit: submit to, cancel in and read the queues listed;
//   - watch: read the queues listed (their events, job statuses and
//     definitions);
//   - executor: report and lease for the clusters listed;
//   - admin: create, update and delete queues, read every queue, and
//     cancel in every queue (to empty one before deleting it). An admin
//     submits and reports only where its submit and executor lists say.
//
// Listing queues shows the queues the principal may read; a principal
// that may read none (an executor's, or one without rights) may not list.
type TokenEntry struct {
	Token     string `json:"token"`
	Principal string `json:"principal"`
	// Submit: the queues it may submit to, cancel in and read.
	Submit []string `json:"submit,omitempty"`
	// Watch: the queues whose events, job statuses and definitions it may
	// read.
	Watch []string `json:"watch,omitempty"`
	// Executor: the clusters it may report and lease for.
	Executor []string `json:"executor,omitempty"`
	// Admin alone creates, updates and deletes queues; it also reads and
	// cancels in every queue.
	Admin bool `json:"admin,omitempty"`
}

// Principal is who a request comes from, and what it may do.
type Principal struct {
	Name                    string
	submit, watch, executor []string
	admin                   bool
}

func allows(list []string, name string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, name)
}

// Admin reports whether the principal may manage queues.
func (p *Principal) Admin() bool { return p.admin }

// MaySubmit reports whether the principal may submit to a queue: its
// submit list names it (admin or not).
func (p *Principal) MaySubmit(queue string) bool { return allows(p.submit, queue) }

// MayCancel reports whether the principal may cancel jobs in a queue:
// those it may submit to, and every queue for an admin.
func (p *Principal) MayCancel(queue string) bool { return p.admin || allows(p.submit, queue) }

// MayWatch reports whether the principal may read a queue's events, job
// statuses and definition (submitting to it implies reading it; an admin
// reads every queue).
func (p *Principal) MayWatch(queue string) bool {
	return p.admin || allows(p.watch, queue) || allows(p.submit, queue)
}

// MayList reports whether the principal may list queues (it is shown
// those it may read): an admin, or a principal given some queue to submit
// to or watch.
func (p *Principal) MayList() bool { return p.admin || len(p.watch) > 0 || len(p.submit) > 0 }

// MayReport reports whether the principal may report and lease for a
// cluster: its executor list names it (admin or not).
func (p *Principal) MayReport(cluster string) bool { return allows(p.executor, cluster) }

// Auth maps tokens to principals. It is immutable after ParseAuth.
type Auth struct {
	// byDigest keys principals by the SHA-256 of their token, so that a
	// lookup compares digests, not secrets.
	byDigest map[[32]byte]*Principal
}

// ParseAuth reads an auth file strictly: unknown keys, a missing token or
// principal, and a token given twice are *flotilla.FieldError values,
// every problem reported at once.
func ParseAuth(data []byte) (*Auth, error) {
	var f AuthFile
	err := strictjson.Decode(data, &f)
	if strictjson.Fatal(err) {
		return nil, err
	}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	a := &Auth{byDigest: make(map[[32]byte]*Principal, len(f.Tokens))}
	for i, t := range f.Tokens {
		p := fmt.Sprintf("tokens[%d]", i)
		if t.Token == "" {
			errs = append(errs, flotilla.Errorf(p+".token", "", flotilla.ErrRequired, ""))
			continue
		}
		if t.Principal == "" {
			errs = append(errs, flotilla.Errorf(p+".principal", "", flotilla.ErrRequired, ""))
		}
		d := sha256.Sum256([]byte(t.Token))
		if _, dup := a.byDigest[d]; dup {
			errs = append(errs, flotilla.Errorf(p+".token", "…", flotilla.ErrDuplicate, "the same token is given twice"))
			continue
		}
		a.byDigest[d] = &Principal{Name: t.Principal, submit: t.Submit, watch: t.Watch, executor: t.Executor, admin: t.Admin}
	}
	if len(f.Tokens) == 0 && err == nil {
		errs = append(errs, flotilla.Errorf("tokens", "", flotilla.ErrRequired, "an auth file gives at least one token"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return a, nil
}

// Lookup returns the principal of a token.
func (a *Auth) Lookup(token string) (*Principal, bool) {
	p, ok := a.byDigest[sha256.Sum256([]byte(token))]
	return p, ok
}

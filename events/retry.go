package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/flotilla-sched/flotilla"
)

// FailureReason classifies why a run failed, besides its exit code: what
// an executor reports (oom, evicted, deadline) or what the service saw
// (a lease that expired or was returned). A retry policy's rules match
// it (RetryRule.OnReasons).
type FailureReason string

// The failure reasons of docs/operator-commands.md's retry policy.
const (
	// ReasonOOM: the job's container was killed for using too much
	// memory (Kubernetes' OOMKilled; the fake executor's exit 137).
	ReasonOOM FailureReason = "oom"
	// ReasonEvicted: the node evicted the job's pod.
	ReasonEvicted FailureReason = "evicted"
	// ReasonDeadline: the job ran past its active deadline.
	ReasonDeadline FailureReason = "deadline"
	// ReasonLeaseExpired and ReasonLeaseReturned: the lease ended without
	// the job ending (lease-expired, lease-returned events).
	ReasonLeaseExpired  FailureReason = "lease-expired"
	ReasonLeaseReturned FailureReason = "lease-returned"
)

// FailureReasons lists every failure reason, in docs/operator-commands.md's order.
func FailureReasons() []FailureReason {
	return []FailureReason{ReasonOOM, ReasonEvicted, ReasonDeadline, ReasonLeaseExpired, ReasonLeaseReturned}
}

// Known reports whether r is one of FailureReasons.
func (r FailureReason) Known() bool { return slices.Contains(FailureReasons(), r) }

// Limits of a retry policy.
const (
	// MaxPolicyAttempts bounds RetryPolicy.MaxAttempts and
	// RetryRule.RetryLimit.
	MaxPolicyAttempts = 100
	// MaxExitCode is the largest exit code a rule names (a process's exit
	// status is a byte).
	MaxExitCode = 255
)

// RetryPolicy is a queue's retry policy, in docs/operator-commands.md's JSON form: a
// failed run that a rule matches (the first that does), with that rule's
// limit and MaxAttempts not yet reached, is queued again (run-failed);
// otherwise the job fails.
type RetryPolicy struct {
	// MaxAttempts bounds the job's leases (its attempts), the retried
	// ones included; 0 is the service's default (Config.MaxAttempts).
	MaxAttempts int         `json:"maxAttempts,omitempty"`
	Rules       []RetryRule `json:"rules"`
}

// RetryRule matches a failed run by its exit code or its failure reason
// (either; it names at least one).
type RetryRule struct {
	OnExitCodes []int           `json:"onExitCodes,omitempty"`
	OnReasons   []FailureReason `json:"onReasons,omitempty"`
	// RetryLimit bounds how many failed runs this rule retries; 0 leaves
	// MaxAttempts the only bound.
	RetryLimit int `json:"retryLimit,omitempty"`
	// AvoidSameNode keeps the next attempt off the node that failed
	// (a preference: it goes there only when no other node can take it).
	AvoidSameNode bool `json:"avoidSameNode,omitempty"`
}

// Check reports every problem of the policy, each a *flotilla.FieldError
// named under field ("retryPolicy.rules[0].onExitCodes[1]"), all joined:
// MaxAttempts outside 0 to MaxPolicyAttempts; more than MaxRules rules; a
// rule naming neither an exit code nor a reason; an exit code outside 1
// to MaxExitCode or given twice in a rule; an unknown reason or one given
// twice in a rule; a retry limit outside 0 to MaxPolicyAttempts.
func (p *RetryPolicy) Check(field string) error {
	var errs []error
	if p.MaxAttempts < 0 || p.MaxAttempts > MaxPolicyAttempts {
		errs = append(errs, flotilla.Errorf(field+".maxAttempts", strconv.Itoa(p.MaxAttempts), flotilla.ErrOutOfRange,
			"want 0 (the service's default) to %d", MaxPolicyAttempts))
	}
	if len(p.Rules) > MaxRules {
		errs = append(errs, flotilla.Errorf(field+".rules", strconv.Itoa(len(p.Rules)), flotilla.ErrOutOfRange,
			"at most %d rules", MaxRules))
	}
	for i := range p.Rules {
		errs = append(errs, p.Rules[i].check(fmt.Sprintf("%s.rules[%d]", field, i)))
	}
	return errors.Join(errs...)
}

// check is Check for one rule, named f.
func (r *RetryRule) check(f string) error {
	var errs []error
	if len(r.OnExitCodes) == 0 && len(r.OnReasons) == 0 {
		errs = append(errs, flotilla.Errorf(f+".onExitCodes", "[]", flotilla.ErrRequired, "a rule names exit codes or reasons (onReasons) to match"))
	}
	for k, c := range r.OnExitCodes {
		p := fmt.Sprintf("%s.onExitCodes[%d]", f, k)
		if c < 1 || c > MaxExitCode {
			errs = append(errs, flotilla.Errorf(p, strconv.Itoa(c), flotilla.ErrOutOfRange, "a failed run exits 1 to %d", MaxExitCode))
		} else if first := slices.Index(r.OnExitCodes, c); first < k {
			errs = append(errs, flotilla.Errorf(p, strconv.Itoa(c), flotilla.ErrDuplicate, "also onExitCodes[%d]", first))
		}
	}
	for k, why := range r.OnReasons {
		p := fmt.Sprintf("%s.onReasons[%d]", f, k)
		if !why.Known() {
			errs = append(errs, flotilla.Errorf(p, string(why), flotilla.ErrUnknownName, "want one of %v", FailureReasons()))
		} else if first := slices.Index(r.OnReasons, why); first < k {
			errs = append(errs, flotilla.Errorf(p, string(why), flotilla.ErrDuplicate, "also onReasons[%d]", first))
		}
	}
	if r.RetryLimit < 0 || r.RetryLimit > MaxPolicyAttempts {
		errs = append(errs, flotilla.Errorf(f+".retryLimit", strconv.Itoa(r.RetryLimit), flotilla.ErrOutOfRange,
			"want 0 (no limit but maxAttempts) to %d", MaxPolicyAttempts))
	}
	return errors.Join(errs...)
}

// ParseRetryPolicy reads a policy in docs/operator-commands.md's JSON form (one object,
// no unknown field) and checks it (Check, fields named under field). A
// malformed document is a *flotilla.FieldError naming field
// (flotilla.ErrMalformed).
func ParseRetryPolicy(field string, data []byte) (*RetryPolicy, error) {
	p, err := DecodeRetryPolicy(field, data)
	if err != nil {
		return nil, err
	}
	if err := p.Check(field); err != nil {
		return nil, err
	}
	return p, nil
}

// DecodeRetryPolicy is ParseRetryPolicy without the check: a client
// reads a file so and leaves the check to the service, which reports the
// policy's problems with the rest of the request's.
func DecodeRetryPolicy(field string, data []byte) (*RetryPolicy, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	var p RetryPolicy
	if err := d.Decode(&p); err != nil {
		return nil, flotilla.Errorf(field, shorten(data), flotilla.ErrMalformed, "%v", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, flotilla.Errorf(field, shorten(data), flotilla.ErrMalformed, "want one JSON object")
	}
	return &p, nil
}

// shorten is a document's first 64 bytes, for an error's value.
func shorten(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Clone returns a deep copy of p (nil for nil).
func (p *RetryPolicy) Clone() *RetryPolicy {
	if p == nil {
		return nil
	}
	c := &RetryPolicy{MaxAttempts: p.MaxAttempts, Rules: slices.Clone(p.Rules)}
	for i := range c.Rules {
		c.Rules[i].OnExitCodes = slices.Clone(c.Rules[i].OnExitCodes)
		c.Rules[i].OnReasons = slices.Clone(c.Rules[i].OnReasons)
	}
	return c
}

// Failure is a failed run as a retry policy sees it.
type Failure struct {
	// ExitCode is the run's exit code (0 for a lease that ended without
	// one); Reason its failure reason ("" when none).
	ExitCode int
	Reason   FailureReason
}

func (f Failure) String() string {
	switch {
	case f.ExitCode != 0 && f.Reason != "":
		return fmt.Sprintf("exit code %d (%s)", f.ExitCode, f.Reason)
	case f.ExitCode != 0:
		return fmt.Sprintf("exit code %d", f.ExitCode)
	}
	return string(f.Reason)
}

// Decision is what a retry policy makes of a failed run.
type Decision struct {
	// Rule is the rule that matched (1 for the first), 0 when none did.
	Rule int
	// Retry: the job is queued again. AvoidNode: its next attempts avoid
	// the node that failed (the rule's avoidSameNode).
	Retry, AvoidNode bool
	// Why is a sentence for the event's reason: the rule and the retry's
	// number, or why the job is not retried.
	Why string
}

// Match returns the first rule matching f (1 for the first) and the rule,
// or 0 and nil.
func (p *RetryPolicy) Match(f Failure) (int, *RetryRule) {
	for i := range p.Rules {
		r := &p.Rules[i]
		if f.ExitCode != 0 && slices.Contains(r.OnExitCodes, f.ExitCode) || f.Reason != "" && slices.Contains(r.OnReasons, f.Reason) {
			return i + 1, r
		}
	}
	return 0, nil
}

// Decide applies the policy to failed run f of job j (its state before
// the failure: Attempts leases so far, Retries per rule): the first
// matching rule retries the job while the rule has retried fewer than its
// RetryLimit runs and j has had fewer than MaxAttempts leases
// (defaultMax when MaxAttempts is 0).
func (p *RetryPolicy) Decide(j *Job, f Failure, defaultMax int) Decision {
	max := p.MaxAttempts
	if max == 0 {
		max = defaultMax
	}
	n, r := p.Match(f)
	if r == nil {
		return Decision{Why: fmt.Sprintf("no retry rule matches %s", f)}
	}
	done := 0
	if n <= len(j.Retries) {
		done = j.Retries[n-1]
	}
	switch {
	case r.RetryLimit > 0 && done >= r.RetryLimit:
		return Decision{Rule: n, Why: fmt.Sprintf("rule %d matched %s; its retry limit is reached (%d of %d)", n, f, done, r.RetryLimit)}
	case j.Attempts >= max:
		return Decision{Rule: n, Why: fmt.Sprintf("rule %d matched %s; attempts exhausted (%d of maxAttempts %d)", n, f, j.Attempts, max)}
	}
	limit := ""
	if r.RetryLimit > 0 {
		limit = fmt.Sprintf(" of %d", r.RetryLimit)
	}
	return Decision{Rule: n, Retry: true, AvoidNode: r.AvoidSameNode,
		Why: fmt.Sprintf("%s: rule %d retries it (retry %d%s, attempt %d of %d next)", f, n, done+1, limit, j.Attempts+1, max)}
}

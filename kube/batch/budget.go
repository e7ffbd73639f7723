package batch

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// DefaultRefusalRetry is how long a victim whose eviction a
// PodDisruptionBudget refused is left alone when the answer suggests no
// delay (the apiserver sends none when the budget allows no disruption).
const DefaultRefusalRetry = 10 * time.Second

// MaxRefusalRetry caps the delay an answer's Retry-After asks for.
const MaxRefusalRetry = 5 * time.Minute

// refusal is an eviction a PodDisruptionBudget refused.
type refusal struct {
	// key is the victim's "namespace/name".
	key string
	// until is when its eviction may be tried again.
	until time.Time
	// detail is the apiserver's reason (the budget's cause when given).
	detail string
}

// refusalOf reads err as a PodDisruptionBudget's refusal of an eviction
// made at now: HTTP 429 TooManyRequests, which the Eviction API answers
// only when a budget forbids the disruption. The retry time is now plus
// the answer's Retry-After, DefaultRefusalRetry without one, at most
// MaxRefusalRetry.
func refusalOf(key string, err error, now time.Time) (refusal, bool) {
	if !apierrors.IsTooManyRequests(err) {
		return refusal{}, false
	}
	delay := DefaultRefusalRetry
	if secs, ok := apierrors.SuggestsClientDelay(err); ok && secs > 0 {
		delay = min(time.Duration(secs)*time.Second, MaxRefusalRetry)
	}
	r := refusal{key: key, until: now.Add(delay)}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		r.detail = s.Message
		if s.Details != nil {
			for _, c := range s.Details.Causes {
				if c.Type == policyv1.DisruptionBudgetCause && c.Message != "" {
					r.detail = c.Message
					break
				}
			}
		}
	}
	return r, true
}

// expireRefusals forgets the refusals whose retry time has come and those
// of pods that are gone (or no longer running). Called with mu held.
func (s *Scheduler) expireRefusals(now time.Time) {
	for uid, r := range s.st.refused {
		ps := s.st.pods[r.key]
		if !now.Before(r.until) || ps == nil || ps.pod.UID != uid || ps.kind != kindRunning {
			delete(s.st.refused, uid)
		}
	}
}

// blockedMessage is the PodScheduled=False message of a pod placed where
// victims whose eviction a PodDisruptionBudget refused still run: each
// victim, the budget's reason and when its eviction is tried again.
func blockedMessage(node string, refs []refusal) string {
	slices.SortFunc(refs, func(a, b refusal) int { return strings.Compare(a.key, b.key) })
	const most = 3
	var parts []string
	for i, r := range refs {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more", len(refs)-most))
			break
		}
		detail := ""
		if r.detail != "" {
			detail = " (" + strings.TrimSuffix(r.detail, ".") + ")"
		}
		parts = append(parts, fmt.Sprintf("the eviction of %s was refused by a PodDisruptionBudget%s; it will be tried again at %s",
			r.key, detail, r.until.UTC().Format(time.RFC3339)))
	}
	return fmt.Sprintf("placed on node %s, but %s", node, strings.Join(parts, "; "))
}

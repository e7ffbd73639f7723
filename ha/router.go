package ha

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/httpapi"
)

// forwardedHeader marks a request a follower forwarded: the process that
// receives it answers it or refuses it, and never forwards it again.
const forwardedHeader = "Flotilla-Forwarded"

// DefaultForwardTimeout is Config.ForwardTimeout's default (serve's
// -forward-timeout): how long a follower
// waits for the leader to answer a forwarded request (its response
// headers; a watch then streams on without a limit) before it answers 503
// itself.
const DefaultForwardTimeout = 30 * time.Second

// router answers the API: the leader's handler while this process leads,
// else a proxy to the leader (with -auth, for a known token only), else
// 503.
type router struct {
	e *elector
	// auth, when set, is this process's -auth: a request goes to the
	// leader only with a known token (the leader checks its rights), so
	// a follower never passes on a request it would itself refuse.
	auth *httpapi.Auth
	// timeout bounds the wait for the leader's answer to a forwarded
	// request (until its response headers); 0 means
	// DefaultForwardTimeout.
	timeout time.Duration
	// api is the leader's API handler, nil while not leading.
	api atomic.Pointer[http.Handler]

	mu    sync.Mutex
	proxy *httputil.ReverseProxy
	to    string
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := rt.api.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	leader, lerr := rt.e.leaderAddr()
	switch {
	case r.Header.Get(forwardedHeader) != "":
		unavailable(w, "this process does not lead (the request was forwarded to it); retry")
	case leader == "" || leader == rt.e.advertise:
		why := "no leader is known yet; retry"
		if errors.Is(lerr, backend.ErrUnavailable) {
			why = "no leader is known: " + lerr.Error()
		}
		unavailable(w, why)
	default:
		p, err := rt.proxyTo(leader)
		if err != nil {
			unavailable(w, err.Error())
			return
		}
		RequireKnownToken(rt.auth, rt.bounded(p)).ServeHTTP(w, r)
	}
}

// errForwardTimeout ends a forwarded request whose leader did not answer
// within the forward timeout.
var errForwardTimeout = errors.New("the leader did not answer within the forward timeout")

// forwardDeadlineKey is the context key of a forwarded request's
// *forwardDeadline.
type forwardDeadlineKey struct{}

// forwardDeadline ends a forwarded request, unless stopped first (when
// the leader's response headers arrive).
type forwardDeadline struct{ timer *time.Timer }

// forwardTimeout is the router's bound on the leader's answer.
func (rt *router) forwardTimeout() time.Duration {
	if rt.timeout <= 0 {
		return DefaultForwardTimeout
	}
	return rt.timeout
}

// bounded forwards through p, ending the request with errForwardTimeout
// when the leader has not answered (sent its response headers) within the
// forward timeout: a leader that is paused, or cut off after it accepted
// the connection, does not hold the request (or the client) for as long
// as TCP would. The body then streams without a limit (a watch).
func (rt *router) bounded(p *httputil.ReverseProxy) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancelCause(r.Context())
		defer cancel(nil)
		d := &forwardDeadline{}
		d.timer = time.AfterFunc(rt.forwardTimeout(), func() { cancel(errForwardTimeout) })
		defer d.timer.Stop()
		p.ServeHTTP(w, r.WithContext(context.WithValue(ctx, forwardDeadlineKey{}, d)))
	})
}

// answered stops the forward deadline of resp's request once the leader's
// response headers have arrived; errForwardTimeout when it had passed.
func answered(resp *http.Response) error {
	if d, ok := resp.Request.Context().Value(forwardDeadlineKey{}).(*forwardDeadline); ok && !d.timer.Stop() {
		return errForwardTimeout
	}
	return nil
}

// proxyTo returns the reverse proxy to the leader at addr.
func (rt *router) proxyTo(addr string) (*httputil.ReverseProxy, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.to == addr {
		return rt.proxy, nil
	}
	target, err := url.Parse(addr)
	if err != nil || target.Host == "" {
		return nil, fmt.Errorf("the leader's address %q is not a URL", addr)
	}
	rt.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
			pr.Out.Header.Set(forwardedHeader, rt.e.advertise)
		},
		FlushInterval:  -1, // watches stream
		ModifyResponse: answered,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, errForwardTimeout) || errors.Is(context.Cause(r.Context()), errForwardTimeout) {
				unavailable(w, fmt.Sprintf("the leader at %s did not answer within %s; retry", addr, rt.forwardTimeout()))
				return
			}
			unavailable(w, fmt.Sprintf("the leader at %s cannot be reached (%v); retry", addr, err))
		},
	}
	rt.to = addr
	return rt.proxy, nil
}

// unavailable answers 503 with Retry-After: 1.
func unavailable(w http.ResponseWriter, why string) {
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	_ = json.NewEncoder(w).Encode(api.Error{Error: why})
}

package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/events"
)

// Errors classify the service's refusals: errors.Is(err, ErrBadRequest)
// holds for a *Error with status 400, and so on.
var (
	ErrBadRequest   = errors.New("bad request")
	ErrUnauthorized = errors.New("unauthorized")
	ErrForbidden    = errors.New("forbidden")
	ErrNotFound     = errors.New("not found")
	ErrConflict     = errors.New("conflict")
	ErrTooLarge     = errors.New("request too large")
	ErrUnavailable  = errors.New("service unavailable")
)

// Error is a refusal by the service: its status and body.
type Error struct {
	Status int
	Body   api.Error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), e.Body.Error)
}

// Unwrap returns the class of the status.
func (e *Error) Unwrap() error {
	switch e.Status {
	case http.StatusBadRequest:
		return ErrBadRequest
	case http.StatusUnauthorized:
		return ErrUnauthorized
	case http.StatusForbidden:
		return ErrForbidden
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusConflict:
		return ErrConflict
	case http.StatusRequestEntityTooLarge:
		return ErrTooLarge
	case http.StatusServiceUnavailable:
		return ErrUnavailable
	}
	return nil
}

// Client calls the service's HTTP API. It is safe for concurrent use.
type Client struct {
	bases []*url.URL
	// cur indexes the server of bases that calls go to first.
	cur   atomic.Uint32
	token string
	http  *http.Client
}

// New returns a client of the service at base (http://127.0.0.1:8080)
// with a bearer token ("" for none). A nil hc means http.DefaultClient.
//
// base may list several servers of one service, comma-separated
// (http://a:8080,http://b:8080: the processes of a highly available
// serve, any of which answers the whole API). Calls go to one of them;
// when it cannot be reached (connecting fails) the call is sent to the
// next at once, and after any other failure to get an answer (a
// connection that broke or timed out) the next call goes to the next
// server.
func New(base, token string, hc *http.Client) (*Client, error) {
	var bases []*url.URL
	for _, b := range strings.Split(base, ",") {
		b = strings.TrimSpace(b)
		u, err := url.Parse(strings.TrimRight(b, "/"))
		if err != nil {
			return nil, fmt.Errorf("client: server URL %q: %w", b, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("client: server URL %q: want http://host:port or https://host:port", b)
		}
		bases = append(bases, u)
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{bases: bases, token: token, http: hc}, nil
}

// dialFailed reports whether err says connecting failed: the request was
// not sent, so sending it elsewhere cannot apply it twice.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// do sends a request and decodes a JSON answer into out (nil: discard).
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	data, err := body(in)
	if err != nil {
		return err
	}
	resp, err := c.send(ctx, method, path, query, data)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("client: %s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

// send sends a request and returns a 2xx response, or the refusal as an
// *Error.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, body []byte) (*http.Response, error) {
	var resp *http.Response
	var err error
	for range len(c.bases) {
		i := c.cur.Load()
		resp, err = c.sendTo(ctx, c.bases[int(i)%len(c.bases)], method, path, query, body)
		if err == nil {
			break
		}
		// The server did not answer: the next call goes to the next one,
		// and this one too when it was not sent.
		c.cur.CompareAndSwap(i, i+1)
		if !dialFailed(err) || ctx.Err() != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	e := &Error{Status: resp.StatusCode}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if json.Unmarshal(data, &e.Body) != nil || e.Body.Error == "" {
		e.Body.Error = strings.TrimSpace(string(data))
	}
	return nil, e
}

// sendTo sends one request to the server at base.
func (c *Client) sendTo(ctx context.Context, base *url.URL, method, path string, query url.Values, body []byte) (*http.Response, error) {
	// path comes escaped (each name through url.PathEscape): it is the
	// URL's raw path after the base's, and its unescaped form the Path.
	u := *base
	u.RawPath = base.EscapedPath() + path
	p, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return nil, fmt.Errorf("client: path %q: %w", path, err)
	}
	u.Path = p
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return c.http.Do(req)
}

// body marshals v; raw bytes pass through.
func body(in any) ([]byte, error) {
	switch b := in.(type) {
	case nil:
		return nil, nil
	case []byte:
		return b, nil
	}
	data, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("client: encoding the request: %w", err)
	}
	return data, nil
}

// CreateQueue creates a queue (admin).
func (c *Client) CreateQueue(ctx context.Context, q api.Queue) (api.Queue, error) {
	var out api.Queue
	err := c.do(ctx, http.MethodPost, "/v1/queues", nil, q, &out)
	return out, err
}

// UpdateQueue replaces a queue's definition (admin).
func (c *Client) UpdateQueue(ctx context.Context, q api.Queue) (api.Queue, error) {
	var out api.Queue
	err := c.do(ctx, http.MethodPut, "/v1/queues/"+url.PathEscape(q.Name), nil, q, &out)
	return out, err
}

// DeleteQueue deletes a queue (admin).
func (c *Client) DeleteQueue(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/v1/queues/"+url.PathEscape(name), nil, nil, nil)
}

// Queue returns one queue with its status.
func (c *Client) Queue(ctx context.Context, name string) (api.Queue, error) {
	var out api.Queue
	err := c.do(ctx, http.MethodGet, "/v1/queues/"+url.PathEscape(name), nil, nil, &out)
	return out, err
}

// ListQueues returns every queue with its status, sorted by name.
func (c *Client) ListQueues(ctx context.Context) ([]api.Queue, error) {
	var out []api.Queue
	err := c.do(ctx, http.MethodGet, "/v1/queues", nil, nil, &out)
	return out, err
}

// CreateGroup creates a group of the queue tree (admin).
func (c *Client) CreateGroup(ctx context.Context, g api.Group) (api.Group, error) {
	var out api.Group
	err := c.do(ctx, http.MethodPost, "/v1/groups", nil, g, &out)
	return out, err
}

// UpdateGroup replaces a group's definition (admin).
func (c *Client) UpdateGroup(ctx context.Context, g api.Group) (api.Group, error) {
	var out api.Group
	err := c.do(ctx, http.MethodPut, "/v1/groups/"+url.PathEscape(g.Name), nil, g, &out)
	return out, err
}

// DeleteGroup deletes a group that no queue or group hangs from (admin).
func (c *Client) DeleteGroup(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/v1/groups/"+url.PathEscape(name), nil, nil, nil)
}

// Group returns one group with its status.
func (c *Client) Group(ctx context.Context, name string) (api.Group, error) {
	var out api.Group
	err := c.do(ctx, http.MethodGet, "/v1/groups/"+url.PathEscape(name), nil, nil, &out)
	return out, err
}

// ListGroups returns every group with its status, sorted by name.
func (c *Client) ListGroups(ctx context.Context) ([]api.Group, error) {
	var out []api.Group
	err := c.do(ctx, http.MethodGet, "/v1/groups", nil, nil, &out)
	return out, err
}

// Submit sends a submit file (docs/submit-file.md's form) and returns the job ids
// in file order, once they are stored.
func (c *Client) Submit(ctx context.Context, file []byte) ([]string, error) {
	out, err := c.SubmitFile(ctx, file)
	return out.JobIDs, err
}

// SubmitFile is Submit with the whole answer: the job ids and the
// warnings about templates whose jobs no node the service knows can run
// (stored all the same).
func (c *Client) SubmitFile(ctx context.Context, file []byte) (api.SubmitResponse, error) {
	var out api.SubmitResponse
	if err := c.do(ctx, http.MethodPost, "/v1/jobs", nil, file, &out); err != nil {
		return api.SubmitResponse{}, err
	}
	return out, nil
}

// Cancel cancels jobs by id.
func (c *Client) Cancel(ctx context.Context, ids ...string) (api.CancelResponse, error) {
	var out api.CancelResponse
	err := c.do(ctx, http.MethodPost, "/v1/jobs/cancel", nil, api.CancelRequest{JobIDs: ids}, &out)
	return out, err
}

// CancelJobSet cancels every job of a job set that has not ended; with
// jobSet "", every job of the queue.
func (c *Client) CancelJobSet(ctx context.Context, queue, jobSet string) (api.CancelResponse, error) {
	var out api.CancelResponse
	err := c.do(ctx, http.MethodPost, "/v1/jobs/cancel", nil, api.CancelRequest{Queue: queue, JobSet: jobSet}, &out)
	return out, err
}

// Status returns the status of each job, in the order asked.
func (c *Client) Status(ctx context.Context, ids ...string) ([]api.JobStatus, error) {
	var out api.StatusResponse
	err := c.do(ctx, http.MethodGet, "/v1/jobs", url.Values{"id": ids}, nil, &out)
	return out.Jobs, err
}

func eventsPath(queue, jobSet string) string {
	return "/v1/queues/" + url.PathEscape(queue) + "/jobsets/" + url.PathEscape(jobSet) + "/events"
}

// Events returns a job set's stored events from sequence number from (0
// and 1: the first), at most limit (≤ 0: all).
func (c *Client) Events(ctx context.Context, queue, jobSet string, from uint64, limit int) ([]events.Event, error) {
	q := url.Values{"from": {strconv.FormatUint(from, 10)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	resp, err := c.send(ctx, http.MethodGet, eventsPath(queue, jobSet), q, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []events.Event
	err = readLines(resp.Body, func(e events.Event) error { out = append(out, e); return nil })
	return out, err
}

// Watch calls fn with a job set's events from sequence number from, then
// with each new one as it is stored, until ctx ends, fn returns an error,
// or the connection drops (the error says which; resume with from = the
// last seq + 1).
func (c *Client) Watch(ctx context.Context, queue, jobSet string, from uint64, fn func(events.Event) error) error {
	q := url.Values{"from": {strconv.FormatUint(from, 10)}, "watch": {"true"}}
	resp, err := c.send(ctx, http.MethodGet, eventsPath(queue, jobSet), q, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := readLines(resp.Body, fn); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return io.ErrUnexpectedEOF // the server never ends a watch by itself
}

func readLines(r io.Reader, fn func(events.Event) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e events.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("client: event line %q: %w", sc.Text(), err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return sc.Err()
}

// Report sends an executor's report for a cluster and returns the reply.
func (c *Client) Report(ctx context.Context, cluster string, r api.Report) (api.ReportReply, error) {
	var out api.ReportReply
	err := c.do(ctx, http.MethodPost, "/v1/clusters/"+url.PathEscape(cluster)+"/report", nil, r, &out)
	return out, err
}

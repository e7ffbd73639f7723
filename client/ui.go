package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/flotilla-sched/flotilla/api"
)

// The web UI's paged reads. Each returns one page; its Next (absent on
// the last page) is the after or cursor of the next. A limit ≤ 0 asks for
// the service's default page.

// pageQuery is a page's query: key=value pairs left out when empty, and
// limit when > 0.
func pageQuery(limit int, kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return q
}

// Overview reads a page of the queues the token may read, by name after
// the name after, with every group and the last cycle (GET /v1/overview).
func (c *Client) Overview(ctx context.Context, after string, limit int) (api.Overview, error) {
	var out api.Overview
	err := c.do(ctx, http.MethodGet, "/v1/overview", pageQuery(limit, "after", after), nil, &out)
	return out, err
}

// Cycles reads the last cycles, newest first (GET /v1/cycles).
func (c *Client) Cycles(ctx context.Context, limit int) (api.CyclesPage, error) {
	var out api.CyclesPage
	err := c.do(ctx, http.MethodGet, "/v1/cycles", pageQuery(limit), nil, &out)
	return out, err
}

// JobSets reads a page of a queue's job sets that have live jobs
// (GET /v1/queues/{queue}/jobsets).
func (c *Client) JobSets(ctx context.Context, queue, after string, limit int) (api.JobSetsPage, error) {
	var out api.JobSetsPage
	err := c.do(ctx, http.MethodGet, "/v1/queues/"+url.PathEscape(queue)+"/jobsets", pageQuery(limit, "after", after), nil, &out)
	return out, err
}

// JobsQuery asks for a page of a job set's jobs: State "queued",
// "leased" or "running" ("" every live job), or an ended state
// ("succeeded", "failed", "cancelled", "preempted": by submit time
// only), Sort "submitted" (the default) or "priority", Cursor the
// previous page's Next.
type JobsQuery struct {
	State, Sort, Cursor string
	Limit               int
}

// Jobs reads a page of a job set's live jobs, or ended ones
// (GET /v1/queues/{queue}/jobsets/{jobSet}/jobs).
func (c *Client) Jobs(ctx context.Context, queue, jobSet string, q JobsQuery) (api.JobsPage, error) {
	var out api.JobsPage
	path := "/v1/queues/" + url.PathEscape(queue) + "/jobsets/" + url.PathEscape(jobSet) + "/jobs"
	err := c.do(ctx, http.MethodGet, path, pageQuery(q.Limit, "state", q.State, "sort", q.Sort, "cursor", q.Cursor), nil, &out)
	return out, err
}

// Nodes reads a page of a cluster's nodes with their room
// (GET /v1/clusters/{cluster}/nodes).
func (c *Client) Nodes(ctx context.Context, cluster, after string, limit int) (api.NodesPage, error) {
	var out api.NodesPage
	err := c.do(ctx, http.MethodGet, "/v1/clusters/"+url.PathEscape(cluster)+"/nodes", pageQuery(limit, "after", after), nil, &out)
	return out, err
}

package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/flotilla-sched/flotilla/api"
)

// Reprioritize gives the queued jobs req names a new priority; leased
// and running ones are reported and left alone.
func (c *Client) Reprioritize(ctx context.Context, req api.ReprioritizeRequest) (api.ReprioritizeResponse, error) {
	var out api.ReprioritizeResponse
	err := c.do(ctx, http.MethodPost, "/v1/jobs/reprioritize", nil, req, &out)
	return out, err
}

// Preempt ends the leased and running jobs req names as a cycle's
// preemption would.
func (c *Client) Preempt(ctx context.Context, req api.PreemptRequest) (api.PreemptResponse, error) {
	var out api.PreemptResponse
	err := c.do(ctx, http.MethodPost, "/v1/jobs/preempt", nil, req, &out)
	return out, err
}

// Cordon cordons (on) or uncordons a queue (kind "queue") or a cluster
// (kind "cluster"): admin only.
func (c *Client) Cordon(ctx context.Context, kind, name string, on bool) error {
	verb := "/cordon"
	if !on {
		verb = "/uncordon"
	}
	return c.do(ctx, http.MethodPost, "/v1/"+kind+"s/"+url.PathEscape(name)+verb, nil, nil, nil)
}

// ListClusters lists the clusters, sorted by name.
func (c *Client) ListClusters(ctx context.Context) ([]api.Cluster, error) {
	var out []api.Cluster
	err := c.do(ctx, http.MethodGet, "/v1/clusters", nil, nil, &out)
	return out, err
}

package client

import (
	"context"
	"net/http"

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

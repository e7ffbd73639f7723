package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/flotilla-sched/flotilla/api"
)

// StatusExplained is Status with each job's long form (JobStatus.Explain):
// its priority, place in its queue, its queue's shares, the last cycle's
// reason per group of nodes and, with flux priorities, its breakdown.
func (c *Client) StatusExplained(ctx context.Context, ids ...string) ([]api.JobStatus, error) {
	var out api.StatusResponse
	err := c.do(ctx, http.MethodGet, "/v1/jobs", url.Values{"id": ids, "explain": {"true"}}, nil, &out)
	return out.Jobs, err
}

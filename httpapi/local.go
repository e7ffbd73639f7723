package httpapi

import (
	"context"
	"sync"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/server"
)

// Local reports to a service in the same process, with the same
// conversions as the HTTP API: an executor's Reporter (executor.Reporter)
// without a network. It converts each report's jobs into memory it keeps
// for the next report, so one Local serves one executor; it is safe for
// concurrent use all the same.
type Local struct {
	Server *server.Server

	mu   sync.Mutex
	jobs []server.JobReport
}

// Report converts the report, passes it to the service and converts the
// reply.
func (l *Local) Report(ctx context.Context, cluster string, r api.Report) (api.ReportReply, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rep, err := ServerReportReusing(&r, cluster, l.Server.Schema(), l.jobs)
	if rep != nil {
		defer func() { clear(rep.Jobs); l.jobs = rep.Jobs[:0] }()
	}
	if err != nil {
		return api.ReportReply{}, err
	}
	reply, err := l.Server.Report(ctx, rep)
	if err != nil {
		return api.ReportReply{}, err
	}
	return ReportReplyOf(reply, l.Server.Schema()), nil
}

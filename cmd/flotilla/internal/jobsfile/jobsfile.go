package jobsfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
	"github.com/flotilla-sched/flotilla/priority"
)

// MaxBytes bounds the jobs file: 64 MiB, as the priority loaders.
const MaxBytes = 64 << 20

// Job is one job of a jobs file (its JSON form is jobJSON).
type Job struct {
	ID, User, Bank, Queue string
	// Urgency is 0–31 (0 holds the job, 31 expedites it); absent means
	// priority.DefaultUrgency.
	Urgency int
	// Where is "line N" for a job read from JSON lines, else empty.
	Where string
}

// jobJSON is one job object of a jobs file, as internal/strictjson decodes
// it: these keys only, each at most once, each of its type.
type jobJSON struct {
	ID      string `json:"id"`
	User    string `json:"user"`
	Bank    string `json:"bank"`
	Queue   string `json:"queue"`
	Urgency *int   `json:"urgency"`
}

// Decode reads a jobs file: a JSON array of job objects, or one job
// object per line (blank lines skipped). Decoding is strict, by
// internal/strictjson: each key must be one of jobJSON's, given once, with
// a value of its type (null means absent); id and user are required;
// urgency is an integer 0–31 (default 16); job ids are unique. Every
// problem is reported, joined, as a *flotilla.FieldError whose field is
// jobs[i] or jobs[i].key, i counting jobs from 0; problems with the file as
// a whole name "jobs".
func Decode(r io.Reader) ([]Job, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, flotilla.Errorf("jobs", "", flotilla.ErrMalformed, "read: %v", err)
	}
	if len(data) > MaxBytes {
		return nil, flotilla.Errorf("jobs", strconv.Itoa(len(data))+" bytes", flotilla.ErrOutOfRange, "larger than %d bytes", MaxBytes)
	}
	var objs []jobJSON
	var where []string // for error details: "line N" of JSON lines, else ""
	var broken []bool  // lines that did not decode at all: reported alone
	var decodeErrs []error
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '[' {
		err := strictjson.Decode(trimmed, &objs)
		if strictjson.Fatal(err) {
			return nil, prefixFields(err, "jobs", "")
		}
		decodeErrs = append(decodeErrs, prefixFields(err, "jobs", ""))
		where, broken = make([]string, len(objs)), make([]bool, len(objs))
	} else {
		for n, line := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var o jobJSON
			at := fmt.Sprintf("line %d", n+1)
			err := strictjson.Decode(line, &o)
			decodeErrs = append(decodeErrs, prefixFields(err, fmt.Sprintf("jobs[%d]", len(objs)), at))
			objs, where, broken = append(objs, o), append(where, at), append(broken, strictjson.Fatal(err))
		}
	}
	if len(objs) == 0 {
		return nil, flotilla.Errorf("jobs", "", flotilla.ErrRequired, "no jobs: want a JSON array or JSON lines of job objects")
	}
	decoded := errors.Join(decodeErrs...)
	var errs []error
	jobs := make([]Job, 0, len(objs))
	seen := map[string]int{}
	for i, o := range objs {
		field := fmt.Sprintf("jobs[%d]", i)
		bad := func(f, v string, class error, format string, args ...any) {
			detail := fmt.Sprintf(format, args...)
			switch {
			case where[i] == "":
			case detail == "":
				detail = where[i]
			default:
				detail += " (" + where[i] + ")"
			}
			errs = append(errs, flotilla.Errorf(f, v, class, "%s", detail))
		}
		if broken[i] {
			continue
		}
		j := Job{ID: o.ID, User: o.User, Bank: o.Bank, Queue: o.Queue, Urgency: priority.DefaultUrgency, Where: where[i]}
		if o.Urgency != nil {
			if u := *o.Urgency; u < priority.MinUrgency || u > priority.MaxUrgency {
				bad(field+".urgency", strconv.Itoa(u), flotilla.ErrOutOfRange, "want an integer %d–%d", priority.MinUrgency, priority.MaxUrgency)
			}
			j.Urgency = *o.Urgency
		}
		if j.ID == "" {
			bad(field+".id", "", flotilla.ErrRequired, "")
		}
		if j.User == "" {
			bad(field+".user", "", flotilla.ErrRequired, "")
		}
		if j.ID != "" {
			if first, dup := seen[j.ID]; dup {
				bad(field+".id", j.ID, flotilla.ErrDuplicate, "also jobs[%d]", first)
			} else {
				seen[j.ID] = i
			}
		}
		jobs = append(jobs, j)
	}
	if err := strictjson.Merge(decoded, errors.Join(errs...)); err != nil {
		return nil, err
	}
	return jobs, nil
}

// prefixFields renames the fields of err's problems, as strictjson names
// them inside one value, to their place in the jobs file: the document
// itself (strictjson.RootField) becomes prefix, a path inside it is put
// after prefix (jobs[0].id, or jobs + [0].id). A non-empty where (such as
// "line 3") is added to each problem's detail.
func prefixFields(err error, prefix, where string) error {
	if err == nil {
		return nil
	}
	in := flotilla.Problems(err)
	out := make([]error, 0, len(in))
	for _, e := range in {
		var fe *flotilla.FieldError
		if !errors.As(e, &fe) {
			out = append(out, e)
			continue
		}
		field := prefix
		switch {
		case fe.Field == strictjson.RootField:
		case strings.HasPrefix(fe.Field, "["):
			field += fe.Field
		default:
			field += "." + fe.Field
		}
		inner := fe.Err
		if where != "" {
			inner = fmt.Errorf("%w (%s)", fe.Err, where)
		}
		out = append(out, &flotilla.FieldError{Field: field, Value: fe.Value, Err: inner})
	}
	return errors.Join(out...)
}

// Problem puts a problem package priority found with job j, the i-th of
// the file (a *flotilla.FieldError whose field starts "job."), at its
// place in the file: jobs[i]..., with the line for JSON lines. Other
// errors are returned as they are.
func (j Job) Problem(err error, i int) error {
	var fe *flotilla.FieldError
	if errors.As(err, &fe) && strings.HasPrefix(fe.Field, "job.") {
		out := &flotilla.FieldError{Field: fmt.Sprintf("jobs[%d].", i) + strings.TrimPrefix(fe.Field, "job."), Value: fe.Value, Err: fe.Err}
		if j.Where != "" {
			out.Err = fmt.Errorf("%w (%s)", fe.Err, j.Where)
		}
		return out
	}
	return err
}

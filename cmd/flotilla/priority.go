package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
	"github.com/flotilla-sched/flotilla/priority"
)

// maxJobsBytes bounds the jobs file: 64 MiB, as the priority loaders.
const maxJobsBytes = 64 << 20

// jobRecord is one job of a jobs file (its JSON form is jobJSON).
type jobRecord struct {
	ID, User, Bank, Queue string
	// Urgency is 0–31 (0 holds the job, 31 expedites it); absent means
	// priority.DefaultUrgency.
	Urgency int
	// where is "line N" for a job read from JSON lines, else empty.
	where string
}

// priorityCmd runs `flotilla priority`: it loads a bank tree (and optional
// weights), ranks every association by its usage, computes each job's
// multi-factor priority and prints the breakdowns as `flux account jobs`
// does. Priorities are computed at one fixed instant, the moment the tree
// is read, so the output depends on the files alone.
func priorityCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("priority", flag.ContinueOnError)
	fs.SetOutput(stderr)
	treePath := fs.String("bank-tree", "", "bank tree JSON file (banks, associations with usage, queue priorities); required")
	weightsPath := fs.String("weights", "", "factor weights JSON file; absent means flux-accounting's defaults")
	jobsPath := fs.String("jobs", "", `jobs file: a JSON array or JSON lines of {"id", "user", "bank", "queue", "urgency"}; required`)
	recompute := fs.Bool("recompute", true, "rank associations by their usage first; false keeps every fair-share at 0.5, as for new associations")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 || *treePath == "" || *jobsPath == "" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	// A fixed instant: no usage decays between loading and prioritizing.
	now := time.Unix(0, 0).UTC()

	tree, code := loadFile(stderr, *treePath, "bank tree", func(r io.Reader) (*priority.BankTree, error) {
		return priority.LoadBankTree(r, now)
	})
	if code != 0 {
		return code
	}
	if *weightsPath != "" {
		w, code := loadFile(stderr, *weightsPath, "weights file", priority.LoadWeights)
		if code != 0 {
			return code
		}
		if err := tree.SetWeights(w); err != nil {
			reportBad(stderr, *weightsPath, "weights file", err)
			return 2
		}
	}
	jobs, code := loadFile(stderr, *jobsPath, "jobs file", decodeJobs)
	if code != 0 {
		return code
	}
	if *recompute {
		if err := tree.Recompute(now); err != nil {
			fmt.Fprintf(stderr, "flotilla: %v\n", err)
			return 2
		}
	}
	rows := make([]priority.Breakdown, 0, len(jobs))
	var errs []error
	for i, j := range jobs {
		b, err := tree.Prioritize(priority.JobRef{ID: j.ID, User: j.User, Bank: j.Bank, Queue: j.Queue}, j.Urgency, now)
		if err != nil {
			errs = append(errs, renameField(err, "job.", fmt.Sprintf("jobs[%d].", i), j.where))
			continue
		}
		rows = append(rows, b)
	}
	if len(errs) > 0 {
		reportBad(stderr, *jobsPath, "jobs file", errors.Join(errs...))
		return 2
	}
	if err := priority.WriteJobsTable(stdout, rows); err != nil {
		fmt.Fprintf(stderr, "flotilla: %v\n", err)
		return 2
	}
	return 0
}

// loadFile opens path and decodes it with load, reporting failures (exit 2).
func loadFile[T any](stderr io.Writer, path, what string, load func(io.Reader) (T, error)) (T, int) {
	var zero T
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "flotilla: %v\n", err)
		return zero, 2
	}
	defer f.Close()
	v, err := load(f)
	if err != nil {
		reportBad(stderr, path, what, err)
		return zero, 2
	}
	return v, 0
}

func reportBad(w io.Writer, path, what string, err error) {
	fmt.Fprintf(w, "flotilla: %s is not a valid %s:\n", path, what)
	printErrors(w, err)
}

// renameField replaces the prefix from of a *flotilla.FieldError's field
// with to and notes where (when not empty); other errors are returned as
// they are.
func renameField(err error, from, to, where string) error {
	var fe *flotilla.FieldError
	if errors.As(err, &fe) && strings.HasPrefix(fe.Field, from) {
		out := &flotilla.FieldError{Field: to + strings.TrimPrefix(fe.Field, from), Value: fe.Value, Err: fe.Err}
		if where != "" {
			out.Err = fmt.Errorf("%w (%s)", fe.Err, where)
		}
		return out
	}
	return err
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

// decodeJobs reads a jobs file: a JSON array of job objects, or one job
// object per line (blank lines skipped). Decoding is strict, by
// internal/strictjson: each key must be one of jobJSON's, given once, with
// a value of its type (null means absent); id and user are required;
// urgency is an integer 0–31 (default 16); job ids are unique. Every
// problem is reported, joined, as a *flotilla.FieldError whose field is
// jobs[i] or jobs[i].key, i counting jobs from 0; problems with the file as
// a whole name "jobs".
func decodeJobs(r io.Reader) ([]jobRecord, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxJobsBytes+1))
	if err != nil {
		return nil, flotilla.Errorf("jobs", "", flotilla.ErrMalformed, "read: %v", err)
	}
	if len(data) > maxJobsBytes {
		return nil, flotilla.Errorf("jobs", strconv.Itoa(len(data))+" bytes", flotilla.ErrOutOfRange, "larger than %d bytes", maxJobsBytes)
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
	jobs := make([]jobRecord, 0, len(objs))
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
		j := jobRecord{ID: o.ID, User: o.User, Bank: o.Bank, Queue: o.Queue, Urgency: priority.DefaultUrgency, where: where[i]}
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

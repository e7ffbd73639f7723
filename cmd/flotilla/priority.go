package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/priority"
)

// maxJobsBytes bounds the jobs file: 64 MiB, as the priority loaders.
const maxJobsBytes = 64 << 20

// jobRecord is one job of a jobs file (JSON field names in jobFields).
type jobRecord struct {
	ID, User, Bank, Queue string
	// Urgency is 0–31 (0 holds the job, 31 expedites it); absent means
	// priority.DefaultUrgency.
	Urgency int
	// where is "line N" for a job read from JSON lines, else empty.
	where string
}

// jobFields are the keys of a job object; every other key is an error.
var jobFields = []string{"id", "user", "bank", "queue", "urgency"}

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

// decodeJobs reads a jobs file: a JSON array of job objects, or one job
// object per line (blank lines skipped). Decoding is strict: each key must
// be one of jobFields, given once, with a value of its type (null means
// absent); id and user are required; urgency is an integer 0–31 (default
// 16); job ids are unique. Every problem is reported, joined, as a
// *flotilla.FieldError whose field is jobs[i] or jobs[i].key, i counting
// jobs from 0; problems with the file as a whole name "jobs".
func decodeJobs(r io.Reader) ([]jobRecord, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxJobsBytes+1))
	if err != nil {
		return nil, flotilla.Errorf("jobs", "", flotilla.ErrMalformed, "read: %v", err)
	}
	if len(data) > maxJobsBytes {
		return nil, flotilla.Errorf("jobs", strconv.Itoa(len(data))+" bytes", flotilla.ErrOutOfRange, "larger than %d bytes", maxJobsBytes)
	}
	var objs [][]byte
	var where []string // for error details: "line N" of JSON lines, else ""
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '[' {
		var raw []json.RawMessage
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		if err := dec.Decode(&raw); err != nil {
			return nil, flotilla.Errorf("jobs", "", flotilla.ErrMalformed, "want a JSON array of job objects: %v", err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, flotilla.Errorf("jobs", "", flotilla.ErrMalformed, "data after the JSON array")
		}
		for _, m := range raw {
			objs = append(objs, m)
			where = append(where, "")
		}
	} else {
		for n, line := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			objs = append(objs, line)
			where = append(where, fmt.Sprintf("line %d", n+1))
		}
	}
	if len(objs) == 0 {
		return nil, flotilla.Errorf("jobs", "", flotilla.ErrRequired, "no jobs: want a JSON array or JSON lines of job objects")
	}
	var errs []error
	jobs := make([]jobRecord, 0, len(objs))
	seen := map[string]int{}
	for i, obj := range objs {
		field := fmt.Sprintf("jobs[%d]", i)
		j, jerrs := decodeJob(obj, field, where[i])
		errs = append(errs, jerrs...)
		if len(jerrs) > 0 {
			continue
		}
		if first, dup := seen[j.ID]; dup {
			errs = append(errs, flotilla.Errorf(field+".id", j.ID, flotilla.ErrDuplicate, "also jobs[%d]", first))
			continue
		}
		seen[j.ID] = i
		jobs = append(jobs, j)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return jobs, nil
}

// decodeJob strictly decodes one job object.
func decodeJob(obj []byte, field, where string) (jobRecord, []error) {
	j := jobRecord{Urgency: priority.DefaultUrgency, where: where}
	var errs []error
	bad := func(f, v string, class error, format string, args ...any) {
		detail := fmt.Sprintf(format, args...)
		switch {
		case where == "":
		case detail == "":
			detail = where
		default:
			detail += " (" + where + ")"
		}
		if detail == "" {
			errs = append(errs, flotilla.Errorf(f, v, class, ""))
			return
		}
		errs = append(errs, flotilla.Errorf(f, v, class, "%s", detail))
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		bad(field, snippet(obj), flotilla.ErrMalformed, "want a JSON object")
		return j, errs
	}
	given := map[string]bool{}
	typed := map[string]bool{} // keys whose value had the wrong type
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			bad(field, snippet(obj), flotilla.ErrMalformed, "%s", syntaxMessage(err))
			return j, errs
		}
		key, _ := tok.(string)
		var val any
		if err := dec.Decode(&val); err != nil {
			bad(field, snippet(obj), flotilla.ErrMalformed, "%s", syntaxMessage(err))
			return j, errs
		}
		kf := field + "." + key
		switch {
		case !slices.Contains(jobFields, key):
			bad(kf, key, flotilla.ErrUnknownName, "unknown key; want one of %s", strings.Join(jobFields, ", "))
			continue
		case given[key]:
			bad(kf, key, flotilla.ErrDuplicate, "key given twice")
			continue
		}
		given[key] = true
		if val == nil {
			continue // null means absent
		}
		if key == "urgency" {
			n, ok := val.(json.Number)
			u, err := n.Int64()
			switch {
			case !ok || err != nil:
				bad(kf, fmt.Sprint(val), flotilla.ErrMalformed, "want an integer %d–%d", priority.MinUrgency, priority.MaxUrgency)
			case u < priority.MinUrgency || u > priority.MaxUrgency:
				bad(kf, n.String(), flotilla.ErrOutOfRange, "want an integer %d–%d", priority.MinUrgency, priority.MaxUrgency)
			default:
				j.Urgency = int(u)
			}
			continue
		}
		s, ok := val.(string)
		if !ok {
			typed[key] = true
			bad(kf, fmt.Sprint(val), flotilla.ErrMalformed, "want a string")
			continue
		}
		switch key {
		case "id":
			j.ID = s
		case "user":
			j.User = s
		case "bank":
			j.Bank = s
		case "queue":
			j.Queue = s
		}
	}
	if _, err := dec.Token(); err != nil {
		bad(field, snippet(obj), flotilla.ErrMalformed, "%s", syntaxMessage(err))
		return j, errs
	}
	if _, err := dec.Token(); err != io.EOF {
		bad(field, snippet(obj), flotilla.ErrMalformed, "data after the job object")
	}
	// A key given with a value of the wrong type is reported above.
	if j.ID == "" && !typed["id"] {
		bad(field+".id", "", flotilla.ErrRequired, "")
	}
	if j.User == "" && !typed["user"] {
		bad(field+".user", "", flotilla.ErrRequired, "")
	}
	return j, errs
}

// syntaxMessage words a decoding error for people.
func syntaxMessage(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the object ends early"
	}
	return err.Error()
}

// snippet is up to 40 bytes of b, for error values.
func snippet(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 40 {
		b = append(b[:37:37], "..."...)
	}
	return strings.ToValidUTF8(string(b), "?")
}

package priority

import (
	"github.com/flotilla-sched/flotilla/internal/strictjson"

	"cmp"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	flotilla "github.com/flotilla-sched/flotilla"
)

// maxLoadBytes bounds what the loaders read: 64 MiB.
const maxLoadBytes = 64 << 20

// BankTreeFile is the JSON form read by LoadBankTree:
//
//	{
//	  "usageHalfLife": "168h",
//	  "banks": [
//	    {"name": "A", "shares": 1, "priority": 300},
//	    {"name": "A1", "parent": "A", "shares": 2}
//	  ],
//	  "associations": [
//	    {"user": "user1", "bank": "A", "shares": 1, "usage": 0}
//	  ],
//	  "queues": [{"name": "bronze", "priority": 1}]
//	}
//
// usageHalfLife is a Go duration, default DefaultUsageHalfLife. A bank's
// parent defaults to the root; banks may be listed in any order. shares
// default to 1 and must be ≥ 0; priority defaults to 0. An association's
// usage is its historical usage as of the load time (0 to MaxUsage, default
// 0). A
// user's first association listed names the user's default bank. Unknown
// keys are errors; a value of the wrong type is reported together with the
// file's other problems.
type BankTreeFile struct {
	UsageHalfLife string             `json:"usageHalfLife,omitempty"`
	Banks         []BankEntry        `json:"banks"`
	Associations  []AssociationEntry `json:"associations"`
	Queues        []QueueEntry       `json:"queues,omitempty"`
}

// BankEntry is one bank in a BankTreeFile.
type BankEntry struct {
	Name     string  `json:"name"`
	Parent   string  `json:"parent,omitempty"`
	Shares   *int64  `json:"shares,omitempty"`
	Priority float64 `json:"priority,omitempty"`
}

// AssociationEntry is one association in a BankTreeFile.
type AssociationEntry struct {
	User   string  `json:"user"`
	Bank   string  `json:"bank"`
	Shares *int64  `json:"shares,omitempty"`
	Usage  float64 `json:"usage,omitempty"`
}

// QueueEntry is one queue priority value in a BankTreeFile.
type QueueEntry struct {
	Name     string `json:"name"`
	Priority int64  `json:"priority"`
}

// LoadBankTree reads a BankTreeFile and returns the tree it describes, its
// usage clock at now, default weights, every association new (fair-share
// 0.5; call Recompute to rank them from their usage). Every problem found
// is returned, joined; each is a *flotilla.FieldError naming the field
// (e.g. "banks[2].parent") and the value.
func LoadBankTree(r io.Reader, now time.Time) (*BankTree, error) {
	var f BankTreeFile
	fatal, decodeErr := decodeStrict(r, "banktree", &f)
	if fatal {
		return nil, decodeErr
	}
	t, err := f.Build(now)
	if err := strictjson.Merge(decodeErr, err); err != nil {
		return nil, err
	}
	return t, nil
}

// Build validates the file's content and returns the tree; see
// LoadBankTree. Use it when the tree is embedded in a larger file.
func (f *BankTreeFile) Build(now time.Time) (*BankTree, error) {
	var errs []error
	halfLife := DefaultUsageHalfLife
	if f.UsageHalfLife != "" {
		d, err := time.ParseDuration(f.UsageHalfLife)
		switch {
		case err != nil:
			errs = append(errs, flotilla.Errorf("usageHalfLife", f.UsageHalfLife, flotilla.ErrMalformed, "want a duration such as 168h"))
		case d <= 0:
			errs = append(errs, flotilla.Errorf("usageHalfLife", f.UsageHalfLife, flotilla.ErrOutOfRange, "must be > 0"))
		default:
			halfLife = d
		}
	}

	index := map[string]int{}
	for i, b := range f.Banks {
		field := "banks[" + strconv.Itoa(i) + "]"
		switch {
		case b.Name == "":
			errs = append(errs, flotilla.Errorf(field+".name", b.Name, flotilla.ErrRequired, ""))
		case b.Name == RootBank:
			errs = append(errs, flotilla.Errorf(field+".name", b.Name, flotilla.ErrDuplicate, "the root bank is implicit"))
		default:
			if first, dup := index[b.Name]; dup {
				errs = append(errs, flotilla.Errorf(field+".name", b.Name, flotilla.ErrDuplicate, "also banks[%d]", first))
			} else {
				index[b.Name] = i
			}
		}
		if b.Shares != nil {
			if err := checkShares(field+".shares", *b.Shares); err != nil {
				errs = append(errs, err)
			}
		}
		if err := checkBankPriority(field+".priority", b.Priority); err != nil {
			errs = append(errs, err)
		}
	}
	// Parents must exist and the bank graph must be a tree under the root.
	for i, b := range f.Banks {
		if b.Parent == "" || b.Parent == RootBank {
			continue
		}
		if _, ok := index[b.Parent]; !ok {
			errs = append(errs, flotilla.Errorf("banks["+strconv.Itoa(i)+"].parent", b.Parent, flotilla.ErrUnknownName, "no such bank"))
		}
	}
	var depth []int
	if len(errs) == 0 {
		var cyclic []int
		depth, cyclic = bankDepths(f.Banks, index)
		for _, i := range cyclic {
			errs = append(errs, flotilla.Errorf("banks["+strconv.Itoa(i)+"].parent", f.Banks[i].Parent, flotilla.ErrInconsistent, "on or below a cycle of parents"))
		}
	}

	seen := map[assocKey]int{}
	for i, a := range f.Associations {
		field := "associations[" + strconv.Itoa(i) + "]"
		if a.User == "" {
			errs = append(errs, flotilla.Errorf(field+".user", a.User, flotilla.ErrRequired, ""))
		}
		if _, ok := index[a.Bank]; !ok && a.Bank != RootBank {
			if a.Bank == "" {
				errs = append(errs, flotilla.Errorf(field+".bank", a.Bank, flotilla.ErrRequired, ""))
			} else {
				errs = append(errs, flotilla.Errorf(field+".bank", a.Bank, flotilla.ErrUnknownName, "no such bank"))
			}
		}
		k := assocKey{a.User, a.Bank}
		if first, dup := seen[k]; dup {
			errs = append(errs, flotilla.Errorf(field, a.User+"@"+a.Bank, flotilla.ErrDuplicate, "also associations[%d]", first))
		} else {
			seen[k] = i
		}
		if a.Shares != nil {
			if err := checkShares(field+".shares", *a.Shares); err != nil {
				errs = append(errs, err)
			}
		}
		if math.IsNaN(a.Usage) || math.IsInf(a.Usage, 0) {
			errs = append(errs, flotilla.Errorf(field+".usage", formatFloat(a.Usage), flotilla.ErrMalformed, "must be finite"))
		} else if a.Usage < 0 {
			errs = append(errs, flotilla.Errorf(field+".usage", formatFloat(a.Usage), flotilla.ErrNegative, ""))
		} else if a.Usage > MaxUsage {
			errs = append(errs, flotilla.Errorf(field+".usage", formatFloat(a.Usage), flotilla.ErrOutOfRange, "must be ≤ %g", MaxUsage))
		}
	}

	queues := map[string]int{}
	for i, q := range f.Queues {
		field := "queues[" + strconv.Itoa(i) + "].name"
		if q.Name == "" {
			errs = append(errs, flotilla.Errorf(field, q.Name, flotilla.ErrRequired, ""))
			continue
		}
		if first, dup := queues[q.Name]; dup {
			errs = append(errs, flotilla.Errorf(field, q.Name, flotilla.ErrDuplicate, "also queues[%d]", first))
			continue
		}
		queues[q.Name] = i
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	t, err := NewBankTree(halfLife, now)
	if err != nil {
		return nil, err
	}
	// Add banks parents first: by depth, then in file order.
	order := make([]int, len(f.Banks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(depth[x], depth[y]) })
	for _, i := range order {
		b := f.Banks[i]
		shares := int64(1)
		if b.Shares != nil {
			shares = *b.Shares
		}
		if err := t.AddBank(b.Name, b.Parent, shares, b.Priority); err != nil {
			return nil, err
		}
	}
	for _, a := range f.Associations {
		shares := int64(1)
		if a.Shares != nil {
			shares = *a.Shares
		}
		if err := t.AddAssociation(a.User, a.Bank, shares); err != nil {
			return nil, err
		}
		t.assocs[assocKey{a.User, a.Bank}].usage = a.Usage
	}
	for _, q := range f.Queues {
		t.queues[q.Name] = q.Priority
	}
	return t, nil
}

// bankDepths returns each bank's depth below the root (1 for a child of the
// root) and the indices of banks on or above a cycle, in O(banks). Every
// parent must name the root or a bank in index.
func bankDepths(banks []BankEntry, index map[string]int) (depth []int, cyclic []int) {
	const unknown, visiting = 0, -1
	depth = make([]int, len(banks))
	var path []int
	for start := range banks {
		if depth[start] != unknown {
			continue
		}
		path = path[:0]
		i := start
		base := 0
		for {
			if depth[i] == visiting { // back on the path: a cycle
				base = -1
				break
			}
			if depth[i] != unknown {
				base = depth[i]
				break
			}
			depth[i] = visiting
			path = append(path, i)
			p := banks[i].Parent
			if p == "" || p == RootBank {
				break
			}
			i = index[p]
		}
		for k := len(path) - 1; k >= 0; k-- {
			if base < 0 {
				depth[path[k]] = -2 // cyclic, or hanging below a cycle
				continue
			}
			base++
			depth[path[k]] = base
		}
	}
	for i, d := range depth {
		if d < 0 {
			cyclic = append(cyclic, i)
		}
	}
	return depth, cyclic
}

// WeightsFile is the JSON form read by LoadWeights; absent keys keep their
// default (DefaultWeights):
//
//	{"fairshare": 100000, "queue": 10000, "bank": 10, "urgency": 1000}
type WeightsFile struct {
	FairShare *int64 `json:"fairshare,omitempty"`
	Queue     *int64 `json:"queue,omitempty"`
	Bank      *int64 `json:"bank,omitempty"`
	Urgency   *int64 `json:"urgency,omitempty"`
}

// LoadWeights reads a WeightsFile: integer weights ≥ 0, unknown keys
// rejected, every problem reported at once. The result can be given to
// BankTree.SetWeights.
func LoadWeights(r io.Reader) (Weights, error) {
	var f WeightsFile
	fatal, decodeErr := decodeStrict(r, "weights", &f)
	if fatal {
		return Weights{}, decodeErr
	}
	w, err := f.Weights()
	if err := strictjson.Merge(decodeErr, err); err != nil {
		return Weights{}, err
	}
	return w, nil
}

// Weights returns DefaultWeights overridden by the keys present, checked;
// see LoadWeights. Use it when the weights are embedded in a larger file.
func (f WeightsFile) Weights() (Weights, error) {
	w := DefaultWeights()
	for _, p := range []struct {
		src *int64
		dst *int64
	}{{f.FairShare, &w.FairShare}, {f.Queue, &w.Queue}, {f.Bank, &w.Bank}, {f.Urgency, &w.Urgency}} {
		if p.src != nil {
			*p.dst = *p.src
		}
	}
	if err := w.Validate(); err != nil {
		return Weights{}, err
	}
	return w, nil
}

// decodeStrict decodes exactly one JSON value into v with
// internal/strictjson; root names the document only in size and read
// errors, the rest carry their JSON path. fatal reports that nothing was
// decoded (the document cannot be read or parsed); otherwise err holds the
// values of the wrong type, left out of v, to be reported with the
// problems a check of v finds (strictjson.Merge).
func decodeStrict(r io.Reader, root string, v any) (fatal bool, err error) {
	data, err := io.ReadAll(io.LimitReader(r, maxLoadBytes+1))
	if err != nil {
		return true, flotilla.Errorf(root, "", flotilla.ErrMalformed, "read: %v", err)
	}
	if len(data) > maxLoadBytes {
		return true, flotilla.Errorf(root, strconv.Itoa(len(data))+" bytes", flotilla.ErrOutOfRange, "larger than %d bytes", maxLoadBytes)
	}
	// Strict: unknown or repeated keys, keys in the wrong case, wrong types,
	// all reported with their JSON path.
	err = strictjson.Decode(data, v)
	return strictjson.Fatal(err), err
}

// snippet returns up to 32 bytes of data around offset, for error values.
func snippet(data []byte, offset int) string {
	lo := max(0, min(offset, len(data))-16)
	hi := min(len(data), lo+32)
	return strings.ToValidUTF8(string(data[lo:hi]), "?")
}

package priority_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	flotilla "github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/priority"
)

const seedTreeJSON = `{
  "usageHalfLife": "24h",
  "banks": [
    {"name": "A1", "parent": "A", "shares": 2},
    {"name": "A", "shares": 1, "priority": 300},
    {"name": "B", "priority": 100},
    {"name": "C", "priority": -5, "shares": 0}
  ],
  "associations": [
    {"user": "user1", "bank": "A"},
    {"user": "user2", "bank": "A", "usage": 12.5},
    {"user": "user2", "bank": "C", "shares": 3},
    {"user": "user3", "bank": "A1"}
  ],
  "queues": [{"name": "bronze", "priority": 1}, {"name": "gold", "priority": 5}]
}`

func TestLoadBankTree(t *testing.T) {
	tree, err := priority.LoadBankTree(strings.NewReader(seedTreeJSON), t0)
	require.NoError(t, err)
	assert.Equal(t, 24*time.Hour, tree.HalfLife())
	assert.Equal(t, t0, tree.Now())
	assert.Equal(t, priority.DefaultWeights(), tree.Weights())
	assert.Equal(t, []priority.BankInfo{
		{Name: "A", Parent: "root", Shares: 1, Priority: 300, Usage: 12.5},
		{Name: "A1", Parent: "A", Shares: 2},
		{Name: "B", Parent: "root", Shares: 1, Priority: 100},
		{Name: "C", Parent: "root", Shares: 0, Priority: -5},
	}, tree.Banks())
	a, ok := tree.Association("user2", "A")
	require.True(t, ok)
	assert.Equal(t, priority.AssociationInfo{User: "user2", Bank: "A", Shares: 1, Usage: 12.5, FairShare: 0.5}, a)
	c, _ := tree.Association("user2", "C")
	assert.Equal(t, int64(3), c.Shares)
	assert.Equal(t, int64(5), tree.QueuePriority("gold"))

	b, err := tree.Prioritize(priority.JobRef{ID: "j", User: "user2", Queue: "bronze"}, priority.DefaultUrgency, t0)
	require.NoError(t, err)
	assert.Equal(t, "A", b.Bank, "first association listed is the default bank")
	assert.Equal(t, uint32(60000), b.Calculation.Priority)
}

func TestLoadBankTreeDefaults(t *testing.T) {
	tree, err := priority.LoadBankTree(strings.NewReader(`{"banks":[{"name":"A"}],"associations":[{"user":"u","bank":"A"}]}`), t0)
	require.NoError(t, err)
	assert.Equal(t, priority.DefaultUsageHalfLife, tree.HalfLife())
	assert.Equal(t, int64(1), tree.Banks()[0].Shares)
	a, _ := tree.Association("u", "A")
	assert.Equal(t, int64(1), a.Shares)

	tree, err = priority.LoadBankTree(strings.NewReader(`{"banks":[],"associations":[{"user":"u","bank":"root"}]}`), t0)
	require.NoError(t, err, "associations may sit under the root")
	_, ok := tree.Association("u", "root")
	assert.True(t, ok)
}

func TestLoadBankTreeErrors(t *testing.T) {
	cases := []struct {
		name, in string
		err      error
		field    string
		value    string
	}{
		{"syntax", `{"banks": [`, flotilla.ErrMalformed, "(root)", ""},
		{"not an object", `[1, 2]`, flotilla.ErrMalformed, "(root)", "[…]"},
		{"unknown key", `{"banks": [], "bankz": 1}`, flotilla.ErrUnknownName, "bankz", "bankz"},
		{"unknown nested key", `{"banks": [{"name": "A", "prio": 1}]}`, flotilla.ErrUnknownName, "banks[0].prio", "prio"},
		{"repeated key", `{"banks": [{"name": "A"}], "banks": []}`, flotilla.ErrDuplicate, "banks", ""},
		{"key in the wrong case", `{"banks": [{"Name": "A"}]}`, flotilla.ErrUnknownName, "banks[0].Name", "Name"},
		// A repeated key is an error even when its last value alone would
		// load: taking the last "banks" would drop bank A and blame the
		// association instead.
		{"repeated key whose last value drops a bank", `{"banks": [{"name": "A"}], "associations": [{"user": "u", "bank": "A"}], "banks": []}`,
			flotilla.ErrDuplicate, "banks", ""},
		// Keys are matched case-sensitively, as the jobs file's are.
		{"keys in the wrong case everywhere", `{"banks": [{"Name": "A", "SHARES": 2}], "associations": [{"User": "u", "Bank": "A"}]}`,
			flotilla.ErrUnknownName, "banks[0].Name", "Name"},
		// An unknown key deep in the file is named by its path, not "banktree".
		{"unknown nested key beside other keys", `{"banks": [{"name": "A", "prio": 3}], "associations": []}`,
			flotilla.ErrUnknownName, "banks[0].prio", "prio"},
		{"wrong type", `{"banks": [{"name": "A", "shares": "many"}]}`, flotilla.ErrMalformed, "banks[0].shares", "many"},
		{"fractional shares", `{"banks": [{"name": "A", "shares": 1.5}]}`, flotilla.ErrMalformed, "banks[0].shares", "1.5"},
		{"trailing data", `{} {}`, flotilla.ErrMalformed, "(root)", ""},
		{"empty input", ``, flotilla.ErrRequired, "(root)", ""},
		{"bad half-life", `{"usageHalfLife": "a week"}`, flotilla.ErrMalformed, "usageHalfLife", "a week"},
		{"zero half-life", `{"usageHalfLife": "0s"}`, flotilla.ErrOutOfRange, "usageHalfLife", "0s"},
		{"bank without name", `{"banks": [{"shares": 1}]}`, flotilla.ErrRequired, "banks[0].name", ""},
		{"root listed", `{"banks": [{"name": "root"}]}`, flotilla.ErrDuplicate, "banks[0].name", "root"},
		{"duplicate bank", `{"banks": [{"name": "A"}, {"name": "A"}]}`, flotilla.ErrDuplicate, "banks[1].name", "A"},
		{"negative shares", `{"banks": [{"name": "A", "shares": -1}]}`, flotilla.ErrNegative, "banks[0].shares", "-1"},
		{"unknown parent", `{"banks": [{"name": "A", "parent": "Z"}]}`, flotilla.ErrUnknownName, "banks[0].parent", "Z"},
		{"cycle", `{"banks": [{"name": "A", "parent": "B"}, {"name": "B", "parent": "A"}]}`, flotilla.ErrInconsistent, "banks[0].parent", "B"},
		{"self parent", `{"banks": [{"name": "A", "parent": "A"}]}`, flotilla.ErrInconsistent, "banks[0].parent", "A"},
		{"association without user", `{"banks": [{"name": "A"}], "associations": [{"bank": "A"}]}`, flotilla.ErrRequired, "associations[0].user", ""},
		{"association without bank", `{"associations": [{"user": "u"}]}`, flotilla.ErrRequired, "associations[0].bank", ""},
		{"association to unknown bank", `{"associations": [{"user": "u", "bank": "Q"}]}`, flotilla.ErrUnknownName, "associations[0].bank", "Q"},
		{"duplicate association", `{"banks": [{"name": "A"}], "associations": [{"user": "u", "bank": "A"}, {"user": "u", "bank": "A"}]}`, flotilla.ErrDuplicate, "associations[1]", "u@A"},
		{"negative usage", `{"banks": [{"name": "A"}], "associations": [{"user": "u", "bank": "A", "usage": -2}]}`, flotilla.ErrNegative, "associations[0].usage", "-2"},
		{"queue without name", `{"queues": [{"priority": 1}]}`, flotilla.ErrRequired, "queues[0].name", ""},
		{"duplicate queue", `{"queues": [{"name": "q"}, {"name": "q"}]}`, flotilla.ErrDuplicate, "queues[1].name", "q"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tree, err := priority.LoadBankTree(strings.NewReader(c.in), t0)
			assert.Nil(t, tree)
			var fe *flotilla.FieldError
			require.ErrorAs(t, err, &fe)
			assert.ErrorIs(t, err, c.err)
			assert.Equal(t, c.field, fe.Field)
			if c.value != "" {
				assert.Equal(t, c.value, fe.Value)
			}
		})
	}
}

func TestLoadBankTreeReportsEveryProblem(t *testing.T) {
	_, err := priority.LoadBankTree(strings.NewReader(`{"banks": [{"name": ""}, {"name": "A", "shares": -1}],
		"associations": [{"user": "", "bank": "nope"}]}`), t0)
	require.Error(t, err)
	errs := allFieldErrors(t, err)
	var fields []string
	for _, fe := range errs {
		fields = append(fields, fe.Field)
	}
	assert.Equal(t, []string{"banks[0].name", "banks[1].shares", "associations[0].user", "associations[0].bank"}, fields)
}

// A value of the wrong type does not hide the file's other problems: the
// rest is decoded and checked, and every problem reported together.
func TestLoadBankTreeReportsTypeErrorsWithEveryOtherProblem(t *testing.T) {
	_, err := priority.LoadBankTree(strings.NewReader(`{"banks": [{"name": "A", "shares": "2"}, {"name": ""}],
		"associations": [{"user": "u", "bank": "nope"}]}`), t0)
	require.Error(t, err)
	var fields []string
	for _, fe := range allFieldErrors(t, err) {
		fields = append(fields, fe.Field)
	}
	assert.Equal(t, []string{"banks[0].shares", "banks[1].name", "associations[0].bank"}, fields)
}

func TestLoadWeights(t *testing.T) {
	w, err := priority.LoadWeights(strings.NewReader(`{"bank": 10}`))
	require.NoError(t, err)
	assert.Equal(t, priority.Weights{FairShare: 100000, Queue: 10000, Bank: 10, Urgency: 1000}, w)
	w, err = priority.LoadWeights(strings.NewReader(`{"fairshare": 1000, "queue": 100000, "bank": 500, "urgency": 0}`))
	require.NoError(t, err)
	assert.Equal(t, priority.Weights{FairShare: 1000, Queue: 100000, Bank: 500, Urgency: 0}, w)
	w, err = priority.LoadWeights(strings.NewReader(`{}`))
	require.NoError(t, err)
	assert.Equal(t, priority.DefaultWeights(), w)

	for _, c := range []struct {
		in    string
		err   error
		field string
	}{
		{`{"age": 1}`, flotilla.ErrUnknownName, "age"},
		{`{"bank": -1}`, flotilla.ErrNegative, "weights.bank"},
		{`{"bank": 0.5}`, flotilla.ErrMalformed, "bank"},
		{`{"bank": 1e30}`, flotilla.ErrMalformed, "bank"},
		{`{"bank": "10"}`, flotilla.ErrMalformed, "bank"},
		{`null x`, flotilla.ErrMalformed, "(root)"},
		{`{"bank":`, flotilla.ErrMalformed, "(root)"},
	} {
		_, err := priority.LoadWeights(strings.NewReader(c.in))
		var fe *flotilla.FieldError
		require.ErrorAs(t, err, &fe, c.in)
		assert.ErrorIs(t, err, c.err, c.in)
		assert.Equal(t, c.field, fe.Field, c.in)
	}
}

// allFieldErrors flattens joined errors and requires every leaf to be a
// *flotilla.FieldError.
func allFieldErrors(t testing.TB, err error) []*flotilla.FieldError {
	t.Helper()
	var out []*flotilla.FieldError
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var fe *flotilla.FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("not a *FieldError: %T %v", e, e)
		}
		if fe.Field == "" {
			t.Fatalf("FieldError without field: %v", fe)
		}
		out = append(out, fe)
	}
	walk(err)
	return out
}

func FuzzLoadBankTree(f *testing.F) {
	f.Add(seedTreeJSON)
	f.Add(`{"banks":[{"name":"A","parent":"B"},{"name":"B","parent":"A"}]}`)
	f.Add(`{"banks":[{"name":"A"}],"associations":[{"user":"u","bank":"A","usage":1e308}]}`)
	f.Add(`{"usageHalfLife":"1ns","banks":[{"name":"x","priority":1e308}],"associations":[{"user":"u","bank":"x"}]}`)
	f.Add(`{"associations":[{"user":"u","bank":"root","shares":0}]}`)
	f.Add(`{}`)
	f.Add(`[`)
	f.Fuzz(func(t *testing.T, in string) {
		tree, err := priority.LoadBankTree(strings.NewReader(in), t0)
		if err != nil {
			if tree != nil {
				t.Fatal("tree returned with an error")
			}
			allFieldErrors(t, err)
			return
		}
		// A loaded tree is usable end to end.
		later := t0.Add(time.Hour)
		if err := tree.Recompute(later); err != nil {
			t.Fatal(err)
		}
		all := tree.Associations()
		ranks := map[int]int{}
		for _, a := range all {
			if a.Rank < 1 || a.Rank > len(all) || a.FairShare <= 0 || a.FairShare > 1 {
				t.Fatalf("bad rank %+v of %d", a, len(all))
			}
			ranks[a.Rank]++
			b, err := tree.Prioritize(priority.JobRef{ID: a.User + "@" + a.Bank, User: a.User, Bank: a.Bank}, priority.DefaultUrgency, later)
			if err != nil {
				t.Fatal(err)
			}
			if b.Calculation.FairShare.Factor != a.FairShare {
				t.Fatal("breakdown disagrees with the association")
			}
		}
		if err := tree.Reprioritize(later); err != nil {
			t.Fatal(err)
		}
		if err := priority.WriteJobsTable(&strings.Builder{}, tree.Breakdowns()); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzLoadWeights(f *testing.F) {
	f.Add(`{"fairshare": 100000, "queue": 10000, "bank": 0, "urgency": 1000}`)
	f.Add(`{"bank": -1}`)
	f.Add(`{"bank": 9223372036854775807}`)
	f.Add(`{"urgency": 1.0}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, in string) {
		w, err := priority.LoadWeights(strings.NewReader(in))
		if err != nil {
			allFieldErrors(t, err)
			return
		}
		if w.Validate() != nil {
			t.Fatalf("loaded invalid weights %+v", w)
		}
		tree, _ := priority.NewBankTree(time.Hour, t0)
		if err := tree.SetWeights(w); err != nil {
			t.Fatal(err)
		}
		c := priority.Calculate(priority.Factors{FairShare: 1, Queue: 1 << 62, Bank: -1e300, Urgency: 31}, w)
		_ = c.Priority // any value of uint32 is in range; this must not panic
	})
}

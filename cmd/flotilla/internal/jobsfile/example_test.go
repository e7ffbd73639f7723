package jobsfile_test

import (
	"fmt"
	"strings"

	"github.com/flotilla-sched/flotilla/cmd/flotilla/internal/jobsfile"
)

// ExampleDecode reads JSON lines: urgency defaults to 16, and a problem
// names its job, field and line.
func ExampleDecode() {
	jobs, err := jobsfile.Decode(strings.NewReader(`{"id": "a", "user": "alice", "bank": "physics"}
{"id": "b", "user": "bob", "urgency": 31}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, j := range jobs {
		fmt.Println(j.ID, j.User, j.Bank, j.Urgency, j.Where)
	}
	_, err = jobsfile.Decode(strings.NewReader(`{"id": "a", "user": "alice", "urgency": 40}`))
	fmt.Println(err)
	// Output:
	// a alice physics 16 line 1
	// b bob  31 line 2
	// jobs[0].urgency "40": is out of range: want an integer 0–31 (line 1)
}

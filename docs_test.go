package flotilla_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink matches a Markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// The repository documents itself: every relative link of the README, the
// docs folder and the nested modules' READMEs names a file that exists,
// and none of them points outside the repository.
func TestDocumentationLinksExist(t *testing.T) {
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob("*/*/README.md")
	if err != nil {
		t.Fatal(err)
	}
	more2, err := filepath.Glob("*/*/*/README.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(append(append(files, "README.md"), more...), more2...)
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			path := filepath.Clean(filepath.Join(filepath.Dir(f), target))
			if strings.HasPrefix(path, "..") {
				t.Errorf("%s links outside the repository: %s", f, m[1])
				continue
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s, which does not exist", f, m[1])
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no links found: the pattern or the file list is wrong")
	}
}

package flotilla_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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

// repoPath matches a file path as text names it: folders and a file name
// ending in .md, .json or .go (docs/submit-file.md, httpapi/openapi.json).
var repoPath = regexp.MustCompile(`[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_-][A-Za-z0-9_.-]*)+\.(?:md|json|go)\b`)

// sharedPage matches the engineers' notes, which live outside the
// repository: user-facing text must not send a user there.
var sharedPage = regexp.MustCompile(`SERVICE\.md|SCENARIOS\.md|DESIGN\.md|QUEUE-TREE\.md|KUBE-HARNESS\.md|\.\./shared`)

// namedFiles returns the repository paths text names: those whose first
// folder is one of the repository's top-level folders (so a JSON path
// such as jobs[0].requests, or a URL, is not taken for a file).
func namedFiles(t *testing.T, text string) []string {
	t.Helper()
	var out []string
	for _, m := range repoPath.FindAllString(text, -1) {
		first, _, _ := strings.Cut(m, "/")
		if first == "" || first == "." || first == ".." {
			continue
		}
		if fi, err := os.Stat(first); err != nil || !fi.IsDir() {
			continue
		}
		out = append(out, m)
	}
	return out
}

// goStrings returns the string literals of the repository's non-test Go
// files, by file: every -h text and error message the commands print is
// one of them (or is built from them).
func goStrings(t *testing.T) map[string][]string {
	t.Helper()
	return goTexts(t, false)
}

// goTexts returns, by file, the string literals of the repository's
// non-test Go files, or with comments set their comments (what a package's
// documentation shows its users).
func goTexts(t *testing.T, comments bool) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		mode := parser.SkipObjectResolution
		if comments {
			mode |= parser.ParseComments
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, mode)
		if err != nil {
			return err
		}
		if comments {
			for _, c := range f.Comments {
				out[path] = append(out[path], c.Text())
			}
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					out[path] = append(out[path], s)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every file a command's -h text or error message names (docs/nodes-file.md,
// sim/doc.go) exists in the repository, and none sends a user to the
// engineers' notes outside it.
func TestHelpTextsAndErrorsNameFilesThatExist(t *testing.T) {
	named := 0
	for path, lits := range goStrings(t) {
		for _, s := range lits {
			if m := sharedPage.FindString(s); m != "" {
				t.Errorf("%s: a string names %s, which is outside the repository: %.80q", path, m, s)
			}
			for _, f := range namedFiles(t, s) {
				named++
				if _, err := os.Stat(f); err != nil {
					t.Errorf("%s: a string names %s, which does not exist", path, f)
				}
			}
		}
	}
	if named == 0 {
		t.Fatal("no file named by any string: the pattern or the walk is wrong")
	}
}

// The comments of the non-test Go files (the packages' documentation) name
// only files that exist, and never the engineers' notes outside the
// repository.
func TestDocCommentsNameFilesThatExist(t *testing.T) {
	named := 0
	for path, texts := range goTexts(t, true) {
		for _, s := range texts {
			if m := sharedPage.FindString(s); m != "" {
				t.Errorf("%s: a comment names %s, which is outside the repository: %.80q", path, m, s)
			}
			for _, f := range namedFiles(t, s) {
				named++
				if _, err := os.Stat(f); err != nil {
					t.Errorf("%s: a comment names %s, which does not exist", path, f)
				}
			}
		}
	}
	if named == 0 {
		t.Fatal("no file named by any comment: the pattern or the walk is wrong")
	}
}

// Every file the README, the docs and the served API description name in
// their text (not only in links: `httpapi/openapi.json`, a command's
// argument) exists, and none names the engineers' notes.
func TestDocumentationNamesFilesThatExist(t *testing.T) {
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "README.md", "httpapi/openapi.json", "scripts/test", "scripts/kube", "scripts/postgres")
	named := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := sharedPage.FindString(string(data)); m != "" {
			t.Errorf("%s names %s, which is outside the repository", f, m)
		}
		for _, p := range namedFiles(t, string(data)) {
			named++
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s names %s, which does not exist", f, p)
			}
		}
	}
	if named == 0 {
		t.Fatal("no file named: the pattern or the file list is wrong")
	}
}

// Package examples holds the cookbook's recipes (docs/cookbook.md), a
// directory each with its job file, its input and the outputs it gives
// (expected/), and the test that runs them.
package examples

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/clitest"
)

var update = flag.Bool("update", false, "write each recipe's outputs to its expected/ directory and to docs/cookbook.md")

// TestMain builds the weir command the recipes run.
func TestMain(m *testing.M) { clitest.Main(m) }

// A recipe is a directory of examples/ run as its page says: the weir
// commands in the repository's root, then the outputs compared with its
// expected/ files.
type recipe struct {
	name string
	// run runs the recipe in root (a copy of the repository's examples/NAME
	// at root/examples/NAME) and returns the outputs that are not files of
	// its out/ directory (a command's standard output, a table's rows), by
	// the name of their expected file. Absent: weir run on its job file.
	run func(t *testing.T, r *recipe, root string) map[string][]byte
	// commands are the command lines the page shows, checked to be there
	// (run adds those it runs).
	commands []string
}

// dir is the recipe's directory under root.
func (r *recipe) dir(root string) string { return filepath.Join(root, "examples", r.name) }

// weir runs weir with args in root as the page shows it (go run ./cmd/weir
// ARGS), fails the test unless it exits 0, and returns its standard output.
func (r *recipe) weir(t *testing.T, root string, args ...string) []byte {
	t.Helper()
	shown := slices.Clone(args)
	for i, a := range shown {
		if strings.ContainsAny(a, " *") {
			shown[i] = `"` + a + `"`
		}
	}
	r.commands = append(r.commands, "go run ./cmd/weir "+strings.Join(shown, " "))
	code, stdout, stderr := clitest.Run(t, root, args...)
	if code != 0 {
		t.Fatalf("weir %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	return []byte(stdout)
}

// sqlite runs the page's sqlite3 query in root and returns what it prints.
func (r *recipe) sqlite(t *testing.T, root, db, query string) []byte {
	t.Helper()
	r.commands = append(r.commands, fmt.Sprintf("sqlite3 -header -column %s \"%s\"", db, query))
	out, err := exec.Command("sqlite3", "-header", "-column", filepath.Join(root, db), query).CombinedOutput()
	if err != nil {
		t.Fatalf("sqlite3 %s: %v\n%s", query, err, out)
	}
	return out
}

// runJob is the usual recipe: weir run on its job file.
func runJob(t *testing.T, r *recipe, root string) map[string][]byte {
	r.weir(t, root, "run", "examples/"+r.name+"/job.yaml")
	return nil
}

// TestCookbook runs every recipe and compares its outputs byte for byte
// with its expected/ files, and those with what docs/cookbook.md shows.
func TestCookbook(t *testing.T) {
	page, err := os.ReadFile("../docs/cookbook.md")
	if err != nil {
		t.Fatal(err)
	}
	shown := shownFiles(t, page)
	for i := range recipes {
		r := &recipes[i]
		t.Run(r.name, func(t *testing.T) {
			root := t.TempDir()
			copyDir(t, r.name, r.dir(root))
			git(t, root, "init", "-q")
			git(t, root, "add", "-A")
			git(t, root, "commit", "-qm", "the recipe")
			run := r.run
			if run == nil {
				run = runJob
			}
			got := run(t, r, root)
			if got == nil {
				got = map[string][]byte{}
			}
			// Every file the job wrote in out/, but the tables' databases.
			out := filepath.Join(r.dir(root), "out")
			filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(out, path)
				if strings.HasPrefix(rel, ".") || strings.Contains(rel, ".db") || strings.Contains(rel, string(filepath.Separator)) {
					return nil
				}
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				got[rel] = b
				return nil
			})
			// What the recipe wrote is ignored by git: a run leaves the
			// repository as it was.
			if st := git(t, root, "status", "--porcelain", "--untracked-files=all"); st != "" {
				t.Errorf("%s: git status after the recipe:\n%s", r.name, st)
			}
			expDir := filepath.Join(r.name, "expected")
			if *update {
				os.RemoveAll(expDir)
				os.MkdirAll(expDir, 0o755)
				for name, b := range got {
					if err := os.WriteFile(filepath.Join(expDir, name), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			want := map[string][]byte{}
			entries, err := os.ReadDir(expDir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				b, err := os.ReadFile(filepath.Join(expDir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				want[e.Name()] = b
			}
			for name, w := range want {
				if g, ok := got[name]; !ok {
					t.Errorf("%s: the recipe wrote no %s", r.name, name)
				} else if !bytes.Equal(g, w) {
					t.Errorf("%s: %s differs from expected/%s:\n got:\n%s\nwant:\n%s", r.name, name, name, g, w)
				}
			}
			for name := range got {
				if _, ok := want[name]; !ok {
					t.Errorf("%s: the recipe wrote %s, which expected/ lacks", r.name, name)
				}
			}
			// The page shows the job file, every expected output as it is,
			// and every command the test ran.
			files := []string{"job.yaml"}
			for name := range want {
				files = append(files, "expected/"+name)
			}
			for _, f := range files {
				path := "examples/" + r.name + "/" + f
				b, err := os.ReadFile(filepath.Join(r.name, f))
				if err != nil {
					t.Fatal(err)
				}
				s, ok := shown[path]
				switch {
				case !ok:
					t.Errorf("docs/cookbook.md does not show %s (a block after <!-- %s -->)", path, path)
				case s != string(b):
					t.Errorf("docs/cookbook.md shows %s as\n%s\nbut it is\n%s", path, s, b)
				}
			}
			for _, c := range r.commands {
				if !bytes.Contains(page, []byte(c)) {
					t.Errorf("docs/cookbook.md does not show the command %q", c)
				}
			}
		})
	}
	if *update {
		updatePage(t, page)
		return
	}
	// And the page shows no file that is not there.
	for path, s := range shown {
		b, err := os.ReadFile(filepath.Join("..", path))
		if err != nil {
			t.Errorf("docs/cookbook.md shows %s: %v", path, err)
		} else if s != string(b) {
			t.Errorf("docs/cookbook.md shows %s as\n%s\nbut it is\n%s", path, s, b)
		}
	}
	names := map[string]bool{}
	for _, r := range recipes {
		names[r.name] = true
	}
	dirs, _ := os.ReadDir(".")
	for _, d := range dirs {
		// The getting-started page's (cmd/weir TestGettingStartedAsShown).
		page := d.Name() == "fraud" || d.Name() == "phones-online"
		if d.IsDir() && !names[d.Name()] && !page {
			t.Errorf("examples/%s is no recipe of the test", d.Name())
		}
	}
}

// marker is the comment before a block that shows a file: <!-- PATH -->.
var marker = regexp.MustCompile("(?m)^<!-- (examples/[^ ]+) -->\n```[a-z]*\n")

// shownFiles returns the files the page shows, by path: each block after a
// marker, as its text.
func shownFiles(t *testing.T, page []byte) map[string]string {
	shown := map[string]string{}
	for _, m := range marker.FindAllSubmatchIndex(page, -1) {
		path := string(page[m[2]:m[3]])
		rest := string(page[m[1]:])
		block, _, ok := strings.Cut(rest, "```\n")
		if !ok && !strings.HasSuffix(rest, "```") {
			t.Fatalf("docs/cookbook.md: the block of %s does not end", path)
		}
		if _, dup := shown[path]; dup {
			t.Errorf("docs/cookbook.md shows %s twice", path)
		}
		shown[path] = block
	}
	return shown
}

// git runs git with args in dir and returns what it prints.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// copyDir copies the recipe's directory but its expected outputs to dst.
func copyDir(t *testing.T, name, dst string) {
	t.Helper()
	err := filepath.WalkDir(name, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(name, path)
		if d.IsDir() {
			if rel == "expected" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// updatePage writes every block of the page that shows a file anew, from
// the file (-update).
func updatePage(t *testing.T, page []byte) {
	var b bytes.Buffer
	rest := page
	for {
		m := marker.FindSubmatchIndex(rest)
		if m == nil {
			break
		}
		b.Write(rest[:m[1]])
		path := string(rest[m[2]:m[3]])
		f, err := os.ReadFile(filepath.Join("..", path))
		if err != nil {
			t.Error(err)
		}
		b.Write(f)
		_, after, _ := bytes.Cut(rest[m[1]:], []byte("```\n"))
		b.WriteString("```\n")
		rest = after
	}
	b.Write(rest)
	if err := os.WriteFile("../docs/cookbook.md", b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

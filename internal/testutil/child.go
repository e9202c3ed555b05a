package testutil

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// childEnv marks the test process InChild starts.
const childEnv = "PGW_TESTUTIL_CHILD"

// InChild runs scenario in a child process — the test binary again, with
// only t's test — and fails t when the child fails or dies, with its
// output: a scenario that may end the whole process (a panic on a goroutine
// no test can recover on) ends only the child. In the child it runs
// scenario with t itself.
func InChild(t *testing.T, scenario func(t *testing.T)) {
	t.Helper()
	if os.Getenv(childEnv) == t.Name() {
		scenario(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+parentName(t.Name())+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the scenario's process failed (%v):\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()+" ") {
		t.Fatalf("the scenario did not run in its process:\n%s", out)
	}
}

// parentName is the -test.run pattern of a test's name: each level of a
// subtest anchored as its own pattern.
func parentName(name string) string {
	out := []byte{}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case '/':
			out = append(out, "$/^"...)
		case '.', '+', '*', '?', '(', ')', '[', ']', '{', '}', '|', '^', '$', '\\':
			out = append(out, '\\', c)
		default:
			out = append(out, c)
		}
	}
	return string(out)
}

package main

// Checks that the patched yaml.v3 behaves like the kyaml fork, using the
// expectations of the fork's own tests. Run by build.sh after building.

import (
	"bytes"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func encode(t *testing.T, v interface{}, setup func(*yaml.Encoder)) string {
	t.Helper()
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	setup(enc)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestCompactSeqIndentWithIndent2(t *testing.T) {
	got := encode(t, map[string]interface{}{"a": []string{"b", "c"}}, func(e *yaml.Encoder) {
		e.SetIndent(2)
		e.CompactSeqIndent()
	})
	if want := "a:\n- b\n- c\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestCompactSeqIndentWithDefaultIndent(t *testing.T) {
	got := encode(t, map[string]interface{}{"a": []string{"b", "c"}}, func(e *yaml.Encoder) {
		e.CompactSeqIndent()
	})
	if want := "a:\n  - b\n  - c\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestDefaultSeqIndent(t *testing.T) {
	got := encode(t, map[string]interface{}{"a": []string{"b", "c"}}, func(e *yaml.Encoder) {
		e.SetIndent(2)
		e.CompactSeqIndent()
		e.DefaultSeqIndent()
	})
	if want := "a:\n  - b\n  - c\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// Without the line-break patch yaml.v3 writes "_: |4\n    \n    a:..." for a
// value starting with a newline, which decodes to a different string.
func TestLiteralLeadingNewlineKept(t *testing.T) {
	v := map[string]string{"_": "\na:\n        b:\n"}
	out, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := "_: |4\n\n    a:\n            b:\n"; string(out) != want {
		t.Fatalf("got %q, want %q", out, want)
	}
	var back map[string]string
	if err := yaml.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if back["_"] != v["_"] {
		t.Fatalf("round trip changed the value: %q", back["_"])
	}
}

func TestFoldedLeadingNewlineKept(t *testing.T) {
	n := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "k"},
		{Kind: yaml.ScalarNode, Style: yaml.FoldedStyle, Value: "\none two\n"},
	}}
	got := encode(t, n, func(e *yaml.Encoder) { e.SetIndent(2); e.CompactSeqIndent() })
	if !strings.HasPrefix(got, "k: >2\n\n  one two\n") {
		t.Fatalf("no line break after the block scalar header: %q", got)
	}
	var back map[string]string
	if err := yaml.Unmarshal([]byte(got), &back); err != nil {
		t.Fatal(err)
	}
	if back["k"] != "\none two\n" {
		t.Fatalf("round trip changed the value: %q (encoded %q)", back["k"], got)
	}
}

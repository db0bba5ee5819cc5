// Command kyaml-oracle round-trips YAML the way kpt/kyaml does.
//
// It reads a YAML stream from standard input (or from the file named by its
// only argument), decodes every document with yaml.v3's Decoder into a
// yaml.Node, and writes all documents back through ONE yaml.v3 Encoder
// configured as kyaml configures it: SetIndent(2) + CompactSeqIndent().
// Documents are therefore separated by "---\n" exactly as the encoder does
// it. Nothing is written until the whole input has been decoded: on a decode
// error the error is printed to standard error and the exit status is 1.
//
// With -yaml-v3 the encoder keeps plain yaml.v3 defaults (indent 4, no
// compact sequences), which is useful to check against yaml.v3's own tests.
//
// With -bench N it reads the input once, then decodes and encodes it N
// times in memory (as above, output discarded) and prints the nanoseconds
// of each round trip, one per line: the peer the YAML benchmark of the
// Rust layer is timed against (core-wasm/benches/yaml_peer.rs).
//
// It must be built against the patched yaml.v3 (see build.sh), because
// CompactSeqIndent only exists in the kyaml fork.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"gopkg.in/yaml.v3"
)

func main() {
	yamlV3 := flag.Bool("yaml-v3", false, "use plain yaml.v3 encoder defaults (indent 4, no compact sequence indent) instead of kyaml's")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [-yaml-v3] [FILE]\n\nReads YAML from FILE or standard input and writes kyaml's round-trip of it.\n\n", os.Args[0])
		flag.PrintDefaults()
	}
	bench := flag.Int("bench", 0, "decode and encode the input this many times and print the nanoseconds of each")
	flag.Parse()
	if flag.NArg() > 1 {
		flag.Usage()
		os.Exit(2)
	}

	var in io.Reader = os.Stdin
	if flag.NArg() == 1 {
		f, err := os.Open(flag.Arg(0))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		defer f.Close()
		in = f
	}

	if *bench > 0 {
		data, err := io.ReadAll(in)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		for i := 0; i < *bench; i++ {
			start := time.Now()
			if _, err := roundTrip(data, !*yamlV3); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Println(time.Since(start).Nanoseconds())
		}
		return
	}

	var docs []*yaml.Node
	dec := yaml.NewDecoder(in)
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		docs = append(docs, &n)
	}

	// A stream without documents (empty, or only comments and blank lines)
	// encodes to nothing. The encoder cannot be closed without having
	// started a stream ("expected STREAM-START"); kyaml ignores that error.
	if len(docs) == 0 {
		return
	}

	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	if !*yamlV3 {
		enc.SetIndent(2)
		enc.CompactSeqIndent()
	}
	for _, n := range docs {
		if err := enc.Encode(n); err != nil {
			fmt.Fprintln(os.Stderr, "encode:", err)
			os.Exit(3)
		}
	}
	if err := enc.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "encode:", err)
		os.Exit(3)
	}
	if _, err := os.Stdout.Write(out.Bytes()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
}

// roundTrip decodes every document of data and encodes them all with one
// encoder, as main does, into memory.
func roundTrip(data []byte, kyaml bool) ([]byte, error) {
	var docs []*yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, &n)
	}
	if len(docs) == 0 {
		return nil, nil
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	if kyaml {
		enc.SetIndent(2)
		enc.CompactSeqIndent()
	}
	for _, n := range docs {
		if err := enc.Encode(n); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

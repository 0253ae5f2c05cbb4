package store

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzParseTopicFile feeds arbitrary bytes to the topic config file
// parser: it never panics, refuses with ErrInvalidConfig, and what it
// accepts formats and parses back to the same file.
func FuzzParseTopicFile(f *testing.F) {
	good := topicFile{state: stateReady, partitions: 3, config: DefaultTopicConfig()}
	f.Add(good.format())
	f.Add([]byte("state=creating\npartitions=1\nretention.ms=-1\ncleanup.policy=compact,delete\n"))
	f.Add([]byte("state=deleting\npartitions=0\n"))
	f.Add([]byte("# c\nstate=ready\npartitions=2\nsegment.bytes=1\n"))
	f.Add([]byte("state=ready\npartitions=99999999999999999999\n"))
	f.Add([]byte("nonsense"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tf, err := parseTopicFile("/t", data)
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		again, err := parseTopicFile("/t", tf.format())
		if err != nil {
			t.Fatalf("formatted file does not parse: %v\n%s", err, tf.format())
		}
		if !reflect.DeepEqual(tf, again) {
			t.Fatalf("round trip: %+v became %+v", tf, again)
		}
	})
}

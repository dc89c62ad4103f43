package memory

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
)

// count is a JSON integer argument. Values beyond int64 saturate, so a
// huge limit is clamped like any other limit above its maximum.
type count int64

func (c *count) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	if i, err := n.Int64(); err == nil {
		*c = count(i)
		return nil
	}
	r, ok := new(big.Rat).SetString(n.String())
	if !ok || !r.IsInt() {
		return fmt.Errorf("%s is not an integer", n)
	}
	if i := r.Num(); i.IsInt64() { // an integral 2.0 or 1e2
		*c = count(i.Int64())
		return nil
	}
	if r.Sign() > 0 {
		*c = math.MaxInt64
	} else {
		*c = math.MinInt64
	}
	return nil
}

// limitOr returns *c capped at max, or def when c is nil. The tool's schema
// sets the least value.
func limitOr(c *count, def, max int) int {
	if c == nil {
		return def
	}
	return int(min(int64(*c), int64(max)))
}

package sessiongen

import (
	"encoding/json"
	"fmt"
)

// head is the tree part of an entry.
type head struct {
	Type     string  `json:"type"`
	ID       string  `json:"id"`
	ParentID *string `json:"parentId"`
}

// parentsOf maps each id to its parent id, "" for a root, and checks that
// ids are unique and parents known and earlier.
func parentsOf(heads []head) (map[string]string, error) {
	parents := make(map[string]string, len(heads))
	for _, h := range heads {
		if _, dup := parents[h.ID]; dup {
			return nil, fmt.Errorf("entry id %q appears twice", h.ID)
		}
		p := ""
		if h.ParentID != nil {
			p = *h.ParentID
			if _, ok := parents[p]; !ok && p != "" {
				return nil, fmt.Errorf("entry %q has parentId %q, which is not an earlier entry", h.ID, p)
			}
		}
		parents[h.ID] = p
	}
	return parents, nil
}

func pathTo(parents map[string]string, leaf string) []string {
	var rev []string
	for id := leaf; id != ""; id = parents[id] {
		rev = append(rev, id)
	}
	out := make([]string, len(rev))
	for i, id := range rev {
		out[len(rev)-1-i] = id
	}
	return out
}

// Path returns the branch that ends at leaf, the entry ids from the root
// to leaf, following parentId through entries.
func Path(entries []json.RawMessage, leaf string) ([]string, error) {
	heads := make([]head, len(entries))
	for i, e := range entries {
		if err := json.Unmarshal(e, &heads[i]); err != nil {
			return nil, fmt.Errorf("entries[%d]: %w", i, err)
		}
	}
	parents, err := parentsOf(heads)
	if err != nil {
		return nil, err
	}
	if _, ok := parents[leaf]; !ok {
		return nil, fmt.Errorf("no entry %q", leaf)
	}
	return pathTo(parents, leaf), nil
}

// BranchSummary appends a branch summary, which Pi writes when the user
// navigates the tree from fromID to the current leaf.
func (b *Builder) BranchSummary(fromID, summary string) string {
	return b.add("branch_summary", struct {
		FromID  string `json:"fromId"`
		Summary string `json:"summary"`
	}{fromID, summary})
}

// Checkout moves the leaf to id, so the next entry is its child and starts
// a new branch there. An empty id makes the next entry a new root.
func (b *Builder) Checkout(id string) {
	if _, ok := b.parents[id]; !ok && id != "" {
		panic(fmt.Sprintf("sessiongen: checkout of unknown entry %q", id))
	}
	b.leaf = id
}

// Leaf returns the id of the current leaf.
func (b *Builder) Leaf() string { return b.leaf }

// PathTo returns the branch ending at leaf.
func (b *Builder) PathTo(leaf string) []string { return pathTo(b.parents, leaf) }

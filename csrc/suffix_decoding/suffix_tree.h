// Bounded-depth suffix tree (a trie of every substring up to `max_depth`
// tokens) over a set of token sequences, used to draft speculative tokens.
//
// Each node counts how many (sequence, start) occurrences pass through it, so
// a node's children give frequency-based continuation probabilities. Nodes
// live in one pool (indices, free list) and child lookup goes through a single
// open-addressing hash table keyed by (parent, token); sibling links make the
// children of a node iterable. Memory is O(stored tokens * max_depth) and is
// returned to the pool when sequences are removed.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace suffix {

// A draft: flat node list in BFS-compatible order. parents[i] is the index of
// the parent draft token (-1 = attached to the last context token).
struct Draft {
  std::vector<int32_t> token_ids;
  std::vector<int32_t> parents;
  std::vector<float> probs;  // cumulative probability of reaching the token
  float score = 0.0f;        // expected number of accepted tokens
  int32_t match_len = 0;     // context suffix length the draft is based on
};

// Open-addressing (linear probing) map from a 64-bit key to a node index.
class ChildTable {
 public:
  ChildTable();
  int32_t find(uint64_t key) const;
  // Hint the cache line of a key's home slot (extend looks up ~max_depth
  // unrelated keys per token; prefetching them first overlaps the misses).
  void prefetch(uint64_t key) const { __builtin_prefetch(&slots_[slot(key)]); }
  void insert(uint64_t key, int32_t value);  // key must be absent
  void erase(uint64_t key);                  // key must be present
  void clear();
  size_t size() const { return size_; }
  size_t bytes() const { return slots_.capacity() * sizeof(Slot); }

 private:
  static constexpr uint64_t kEmpty = ~0ULL;
  size_t slot(uint64_t key) const;
  void grow();
  // Key and value side by side: one cache line per probe instead of two.
  struct Slot {
    uint64_t key;
    int32_t val;
  };
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

class SuffixTree {
 public:
  explicit SuffixTree(int32_t max_depth);

  int32_t max_depth() const { return max_depth_; }

  // Append tokens to a sequence (creating it if new). O(max_depth) per token.
  void extend(int64_t seq_id, const int32_t* tokens, size_t n);
  // Remove a sequence and all its occurrences. Returns false if unknown.
  bool remove(int64_t seq_id);
  bool contains(int64_t seq_id) const { return seqs_.count(seq_id) != 0; }

  // Length of the longest suffix of `pattern` (below max_depth) that occurs
  // in the tree followed by at least one more token.
  int32_t longest_match(const int32_t* pattern, size_t n) const;

  // Draft from the best of a few context-suffix lengths (see .cc).
  // `seq_id` (optional, -1: none) names a stored sequence whose tokens end
  // the way `pattern` does (a request's own context): suffixes shared with
  // it are then looked up in its frontier in O(1) instead of walked from the
  // root. The result is identical either way; a mismatching or unknown
  // sequence only costs the comparison.
  Draft speculate(const int32_t* pattern, size_t n, int32_t max_spec_tokens,
                  double max_spec_factor, double max_spec_offset,
                  double min_token_prob, bool use_tree, int64_t seq_id = -1) const;

  // Slip recovery: the longest exact match m of `pattern` is at most
  // `max_tail` (else an empty draft). Assume the `skip` tokens just before
  // that match were substitutions of the source: find the longest L in
  // [min_anchor, anchor_len] such that the L pattern tokens before them, any
  // `skip` tokens other than the pattern's, then the last m pattern tokens
  // form a stored path with a continuation, and draft from its end (greedy
  // path). Among wildcard choices the most frequent path wins (ties: smaller
  // tokens, compared in order). match_len = L + skip + m; the budget is
  // computed from it as in speculate.
  Draft recover(const int32_t* pattern, size_t n, int32_t max_spec_tokens, double max_spec_factor,
                double max_spec_offset, double min_token_prob, int32_t max_tail,
                int32_t anchor_len, int32_t min_anchor, int32_t skip, int64_t seq_id = -1) const;

  size_t num_nodes() const { return live_nodes_; }
  size_t num_sequences() const { return seqs_.size(); }
  size_t num_tokens() const { return num_tokens_; }
  size_t memory_bytes() const;
  // Occurrence count of a token path (0 if absent) and its continuations.
  int64_t count(const int32_t* path, size_t n) const;
  std::vector<std::pair<int32_t, int32_t>> continuations(const int32_t* path, size_t n) const;
  // Structural self-check used by tests; returns an empty string when valid.
  std::string check_invariants() const;

 private:
  struct Node {
    int32_t token;
    int32_t count;
    int32_t parent;
    int32_t first_child;
    int32_t next_sib;
    int32_t prev_sib;
  };
  struct Seq {
    std::vector<int32_t> tokens;
    // frontier[k] = node of the suffix of length k+1 ending at the last
    // token; only suffixes shorter than max_depth are kept (they can grow).
    std::vector<int32_t> frontier;
  };

  static uint64_t key(int32_t parent, int32_t token) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(parent)) << 32) |
           static_cast<uint32_t>(token);
  }
  int32_t child(int32_t node, int32_t token) const { return table_.find(key(node, token)); }
  int32_t child_or_create(int32_t node, int32_t token);
  void release(int32_t node);
  int32_t walk(const int32_t* tokens, size_t n) const;  // -1 if absent
  // Frontier of a stored sequence and how many trailing pattern tokens it shares.
  struct Anchor {
    const std::vector<int32_t>* frontier = nullptr;
    size_t shared = 0;
  };
  Anchor anchor(int64_t seq_id, const int32_t* pattern, size_t n) const;
  // Node of the last `len` pattern tokens (-1 if absent).
  int32_t suffix_node(const int32_t* pattern, size_t n, int32_t len, const Anchor& a) const;
  int32_t longest_match(const int32_t* pattern, size_t n, const Anchor& a) const;
  float expand_path(int32_t node, int32_t budget, double min_prob, Draft* out) const;
  float expand_tree(int32_t node, int32_t budget, double min_prob, Draft* out) const;

  int32_t max_depth_;
  std::vector<Node> nodes_;
  std::vector<int32_t> free_;
  ChildTable table_;
  std::unordered_map<int64_t, Seq> seqs_;
  size_t live_nodes_ = 0;
  size_t num_tokens_ = 0;
};

}  // namespace suffix

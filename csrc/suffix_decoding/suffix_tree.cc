#include "suffix_tree.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <sstream>

namespace suffix {

// ---------------------------------------------------------------- ChildTable

ChildTable::ChildTable() { clear(); }

void ChildTable::clear() {
  slots_.assign(16, Slot{kEmpty, -1});
  slots_.shrink_to_fit();
  mask_ = 15;
  size_ = 0;
}

size_t ChildTable::slot(uint64_t key) const {
  // Fibonacci hashing spreads (parent, token) pairs that differ in few bits.
  uint64_t h = key * 0x9E3779B97F4A7C15ULL;
  h ^= h >> 29;
  return static_cast<size_t>(h) & mask_;
}

int32_t ChildTable::find(uint64_t key) const {
  for (size_t i = slot(key);; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.key == key) return s.val;
    if (s.key == kEmpty) return -1;
  }
}

void ChildTable::grow() {
  std::vector<Slot> old;
  old.swap(slots_);
  size_t cap = (mask_ + 1) * 2;
  slots_.assign(cap, Slot{kEmpty, -1});
  mask_ = cap - 1;
  for (const Slot& s : old) {
    if (s.key == kEmpty) continue;
    size_t j = slot(s.key);
    while (slots_[j].key != kEmpty) j = (j + 1) & mask_;
    slots_[j] = s;
  }
}

void ChildTable::insert(uint64_t key, int32_t value) {
  if ((size_ + 1) * 10 > (mask_ + 1) * 7) grow();
  size_t i = slot(key);
  while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
  slots_[i] = Slot{key, value};
  ++size_;
}

void ChildTable::erase(uint64_t key) {
  size_t i = slot(key);
  while (slots_[i].key != key) i = (i + 1) & mask_;
  // Backward-shift deletion keeps probe chains intact without tombstones.
  size_t j = i;
  for (;;) {
    j = (j + 1) & mask_;
    if (slots_[j].key == kEmpty) break;
    size_t home = slot(slots_[j].key);
    bool movable = (i <= j) ? (home <= i || home > j) : (home <= i && home > j);
    if (movable) {
      slots_[i] = slots_[j];
      i = j;
    }
  }
  slots_[i] = Slot{kEmpty, -1};
  --size_;
}

// ---------------------------------------------------------------- SuffixTree

SuffixTree::SuffixTree(int32_t max_depth) : max_depth_(max_depth) {
  nodes_.push_back(Node{-1, 0, -1, -1, -1, -1});
  live_nodes_ = 1;
}

int32_t SuffixTree::child_or_create(int32_t node, int32_t token) {
  uint64_t k = key(node, token);
  int32_t c = table_.find(k);
  if (c >= 0) return c;
  if (!free_.empty()) {
    c = free_.back();
    free_.pop_back();
  } else {
    c = static_cast<int32_t>(nodes_.size());
    nodes_.push_back(Node{});
  }
  Node& n = nodes_[c];
  n.token = token;
  n.count = 0;
  n.parent = node;
  n.first_child = -1;
  n.prev_sib = -1;
  n.next_sib = nodes_[node].first_child;
  if (n.next_sib >= 0) nodes_[n.next_sib].prev_sib = c;
  nodes_[node].first_child = c;
  table_.insert(k, c);
  ++live_nodes_;
  return c;
}

void SuffixTree::release(int32_t c) {
  Node& n = nodes_[c];
  if (n.prev_sib >= 0)
    nodes_[n.prev_sib].next_sib = n.next_sib;
  else
    nodes_[n.parent].first_child = n.next_sib;
  if (n.next_sib >= 0) nodes_[n.next_sib].prev_sib = n.prev_sib;
  table_.erase(key(n.parent, n.token));
  free_.push_back(c);
  --live_nodes_;
}

void SuffixTree::extend(int64_t seq_id, const int32_t* tokens, size_t n) {
  Seq& s = seqs_[seq_id];
  const size_t keep = static_cast<size_t>(max_depth_ - 1);
  for (size_t i = 0; i < n; ++i) {
    const int32_t t = tokens[i];
    const size_t f = s.frontier.size();
    const size_t nf = std::min(f + 1, keep);
    for (size_t k = 0; k < f; ++k) table_.prefetch(key(s.frontier[k], t));
    table_.prefetch(key(0, t));
    s.frontier.resize(nf);
    // Grow every live suffix by one token, longest first so the frontier can
    // be shifted in place.
    for (size_t k = f; k-- > 0;) {
      int32_t c = child_or_create(s.frontier[k], t);
      ++nodes_[c].count;
      if (k + 1 < nf) s.frontier[k + 1] = c;
    }
    int32_t c0 = child_or_create(0, t);
    ++nodes_[c0].count;
    ++nodes_[0].count;
    if (nf > 0) s.frontier[0] = c0;
    s.tokens.push_back(t);
  }
  num_tokens_ += n;
}

bool SuffixTree::remove(int64_t seq_id) {
  auto it = seqs_.find(seq_id);
  if (it == seqs_.end()) return false;
  const std::vector<int32_t>& toks = it->second.tokens;
  const size_t n = toks.size();
  for (size_t s = 0; s < n; ++s) {
    --nodes_[0].count;
    int32_t node = 0;
    const size_t end = std::min(n, s + static_cast<size_t>(max_depth_));
    for (size_t j = s; j < end; ++j) {
      int32_t c = child(node, toks[j]);
      if (--nodes_[c].count == 0) release(c);
      node = c;  // still valid for the next lookup: ids are not reused here
    }
  }
  num_tokens_ -= n;
  seqs_.erase(it);
  if (seqs_.empty()) {
    // Give everything back when the tree becomes empty.
    std::vector<Node>().swap(nodes_);
    std::vector<int32_t>().swap(free_);
    nodes_.push_back(Node{-1, 0, -1, -1, -1, -1});
    table_.clear();
    live_nodes_ = 1;
  }
  return true;
}

int32_t SuffixTree::walk(const int32_t* tokens, size_t n) const {
  int32_t node = 0;
  for (size_t i = 0; i < n && node >= 0; ++i) node = child(node, tokens[i]);
  return node;
}

SuffixTree::Anchor SuffixTree::anchor(int64_t seq_id, const int32_t* pattern, size_t n) const {
  Anchor a;
  if (seq_id < 0) return a;
  auto it = seqs_.find(seq_id);
  if (it == seqs_.end()) return a;
  const std::vector<int32_t>& toks = it->second.tokens;
  const size_t lim = std::min({n, toks.size(), it->second.frontier.size()});
  size_t k = 0;
  while (k < lim && pattern[n - 1 - k] == toks[toks.size() - 1 - k]) ++k;
  a.frontier = &it->second.frontier;
  a.shared = k;
  return a;
}

int32_t SuffixTree::suffix_node(const int32_t* pattern, size_t n, int32_t len, const Anchor& a) const {
  // frontier[len - 1] is the node of the sequence's last `len` tokens, which
  // are the pattern's last `len` tokens while len <= shared.
  if (a.frontier != nullptr && len >= 1 && static_cast<size_t>(len) <= a.shared)
    return (*a.frontier)[len - 1];
  return walk(pattern + n - len, len);
}

int32_t SuffixTree::longest_match(const int32_t* pattern, size_t n) const {
  return longest_match(pattern, n, Anchor{});
}

int32_t SuffixTree::longest_match(const int32_t* pattern, size_t n, const Anchor& a) const {
  // Only occurrences that continue count: the context itself is stored in
  // its request tree and always "matches" at its own end. Having a continuing
  // occurrence is monotone in the suffix length (drop the first token of an
  // occurrence and it still continues), so binary search the length.
  auto continues = [&](int32_t len) {
    int32_t node = suffix_node(pattern, n, len, a);
    return node >= 0 && nodes_[node].first_child >= 0;
  };
  int32_t lo = 0, hi = static_cast<int32_t>(std::min(n, static_cast<size_t>(max_depth_ - 1)));
  if (hi > 0 && continues(hi)) return hi;
  --hi;
  while (lo < hi) {
    int32_t mid = (lo + hi + 1) / 2;
    if (continues(mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

float SuffixTree::expand_path(int32_t node, int32_t budget, double min_prob, Draft* out) const {
  // Greedy: follow the most frequent continuation (ties: smaller token id).
  double p = 1.0;
  float score = 0.0f;
  for (int32_t i = 0; i < budget; ++i) {
    int64_t total = 0;
    int32_t best = -1;
    for (int32_t c = nodes_[node].first_child; c >= 0; c = nodes_[c].next_sib) {
      const Node& cn = nodes_[c];
      total += cn.count;
      if (best < 0 || cn.count > nodes_[best].count ||
          (cn.count == nodes_[best].count && cn.token < nodes_[best].token))
        best = c;
    }
    if (best < 0) break;
    double q = p * static_cast<double>(nodes_[best].count) / static_cast<double>(total);
    if (q < min_prob) break;
    out->token_ids.push_back(nodes_[best].token);
    out->parents.push_back(i - 1);
    out->probs.push_back(static_cast<float>(q));
    score += static_cast<float>(q);
    p = q;
    node = best;
  }
  return score;
}

float SuffixTree::expand_tree(int32_t node, int32_t budget, double min_prob, Draft* out) const {
  // Best-first growth: taking the `budget` most probable nodes maximises the
  // expected number of accepted tokens, and they always form a subtree.
  struct Item {
    double prob;
    int32_t token;
    int32_t node;
    int32_t parent;
    bool operator<(const Item& o) const {
      return prob < o.prob || (prob == o.prob && token > o.token);
    }
  };
  std::priority_queue<Item> heap;
  auto push_children = [&](int32_t from, double p, int32_t parent_idx) {
    int64_t total = 0;
    for (int32_t c = nodes_[from].first_child; c >= 0; c = nodes_[c].next_sib) total += nodes_[c].count;
    if (total == 0) return;
    for (int32_t c = nodes_[from].first_child; c >= 0; c = nodes_[c].next_sib) {
      double q = p * static_cast<double>(nodes_[c].count) / static_cast<double>(total);
      if (q >= min_prob) heap.push(Item{q, nodes_[c].token, c, parent_idx});
    }
  };
  push_children(node, 1.0, -1);
  float score = 0.0f;
  while (!heap.empty() && static_cast<int32_t>(out->token_ids.size()) < budget) {
    Item it = heap.top();
    heap.pop();
    int32_t idx = static_cast<int32_t>(out->token_ids.size());
    out->token_ids.push_back(it.token);
    out->parents.push_back(it.parent);
    out->probs.push_back(static_cast<float>(it.prob));
    score += static_cast<float>(it.prob);
    push_children(it.node, it.prob, idx);
  }
  return score;
}

Draft SuffixTree::speculate(const int32_t* pattern, size_t n, int32_t max_spec_tokens,
                            double max_spec_factor, double max_spec_offset,
                            double min_token_prob, bool use_tree, int64_t seq_id) const {
  Draft best;
  if (n == 0 || max_spec_tokens <= 0) return best;
  const Anchor a = anchor(seq_id, pattern, n);
  const int32_t lmax = longest_match(pattern, n, a);
  if (lmax == 0) return best;
  auto budget = [&](int32_t len) {
    double lim = std::floor(max_spec_factor * len + max_spec_offset);
    int32_t b = std::min(max_spec_tokens, max_depth_ - len);
    if (lim < b) b = static_cast<int32_t>(std::max(0.0, lim));
    return b;
  };
  // A long match is the most specific context, but in a depth-bounded tree
  // it leaves little room below it. Also try the longest match that leaves
  // room for a full draft, and one in between; keep the best expected gain.
  int32_t lfit = lmax;
  while (lfit > 1 && budget(lfit) < std::min(max_spec_tokens, budget(lfit - 1))) --lfit;
  int32_t cands[3] = {lmax, lfit, (lmax + lfit) / 2};
  for (int ci = 0; ci < 3; ++ci) {
    const int32_t len = cands[ci];
    if (len < 1 || (ci == 1 && len == lmax) || (ci == 2 && (len == lmax || len == lfit))) continue;
    const int32_t b = budget(len);
    if (b <= 0) continue;
    const int32_t node = suffix_node(pattern, n, len, a);
    if (node < 0) continue;
    Draft d;
    d.match_len = len;
    d.score = use_tree ? expand_tree(node, b, min_token_prob, &d)
                       : expand_path(node, b, min_token_prob, &d);
    if (d.score > best.score) best = std::move(d);
  }
  return best;
}

Draft SuffixTree::recover(const int32_t* pattern, size_t n, int32_t max_spec_tokens,
                          double max_spec_factor, double max_spec_offset, double min_token_prob,
                          int32_t max_tail, int32_t anchor_len, int32_t min_anchor, int32_t skip,
                          int64_t seq_id) const {
  Draft out;
  if (n == 0 || max_spec_tokens <= 0 || skip < 1 || skip > 2) return out;
  min_anchor = std::max(min_anchor, 1);
  const Anchor a = anchor(seq_id, pattern, n);
  const int32_t m = longest_match(pattern, n, a);
  if (m > max_tail) return out;
  // Pattern layout: [.. A (L tokens)][W (skip tokens)][B (m tokens)].
  const int64_t a_end = static_cast<int64_t>(n) - m - skip;  // one past A
  const int32_t lhi = static_cast<int32_t>(std::min<int64_t>(anchor_len, a_end));
  if (lhi < min_anchor) return out;
  const int32_t* w = pattern + a_end;
  const int32_t* b = w + skip;
  // Best end node below A's node: walk each wildcard choice, then B.
  auto best_end = [&](int32_t node, int32_t* count) {
    int32_t best = -1;
    int32_t best_w[2] = {0, 0};
    auto consider = [&](int32_t mid, const int32_t* wt) {
      int32_t e = mid;
      for (int32_t i = 0; i < m && e >= 0; ++i) e = child(e, b[i]);
      if (e < 0 || nodes_[e].first_child < 0) return;
      bool better = best < 0 || nodes_[e].count > nodes_[best].count;
      if (!better && nodes_[e].count == nodes_[best].count) {
        for (int32_t i = 0; i < skip; ++i) {
          if (wt[i] != best_w[i]) { better = wt[i] < best_w[i]; break; }
        }
      }
      if (better) {
        best = e;
        for (int32_t i = 0; i < skip; ++i) best_w[i] = wt[i];
      }
    };
    for (int32_t c1 = nodes_[node].first_child; c1 >= 0; c1 = nodes_[c1].next_sib) {
      int32_t wt[2] = {nodes_[c1].token, 0};
      if (skip == 1) {
        if (wt[0] != w[0]) consider(c1, wt);
        continue;
      }
      for (int32_t c2 = nodes_[c1].first_child; c2 >= 0; c2 = nodes_[c2].next_sib) {
        wt[1] = nodes_[c2].token;
        if (wt[0] != w[0] || wt[1] != w[1]) consider(c2, wt);
      }
    }
    if (best >= 0) *count = nodes_[best].count;
    return best;
  };
  auto try_len = [&](int32_t len) {
    if (len + skip + m >= max_depth_) return -1;  // no room for a continuation
    int32_t node = walk(pattern + a_end - len, len);
    if (node < 0) return -1;
    int32_t cnt = 0;
    return best_end(node, &cnt);
  };
  // Having such a path is monotone in L (drop A's first token and it stays),
  // so binary search the longest L.
  int32_t lo = min_anchor, hi = lhi;
  int32_t end = try_len(lo);
  if (end < 0) return out;
  int32_t end_hi = try_len(hi);
  if (end_hi >= 0) {
    lo = hi;
    end = end_hi;
  } else {
    --hi;
    while (lo < hi) {
      int32_t mid = (lo + hi + 1) / 2;
      int32_t e = try_len(mid);
      if (e >= 0) {
        lo = mid;
        end = e;
      } else {
        hi = mid - 1;
      }
    }
  }
  const int32_t eff = lo + skip + m;
  double lim = std::floor(max_spec_factor * eff + max_spec_offset);
  int32_t budget = std::min(max_spec_tokens, max_depth_ - eff);
  if (lim < budget) budget = static_cast<int32_t>(std::max(0.0, lim));
  if (budget <= 0) return out;
  out.match_len = eff;
  out.score = expand_path(end, budget, min_token_prob, &out);
  return out;
}

int64_t SuffixTree::count(const int32_t* path, size_t n) const {
  int32_t node = walk(path, n);
  return node < 0 ? 0 : nodes_[node].count;
}

std::vector<std::pair<int32_t, int32_t>> SuffixTree::continuations(const int32_t* path,
                                                                   size_t n) const {
  std::vector<std::pair<int32_t, int32_t>> out;
  int32_t node = walk(path, n);
  if (node < 0) return out;
  for (int32_t c = nodes_[node].first_child; c >= 0; c = nodes_[c].next_sib)
    out.emplace_back(nodes_[c].token, nodes_[c].count);
  std::sort(out.begin(), out.end());
  return out;
}

size_t SuffixTree::memory_bytes() const {
  size_t b = sizeof(*this) + nodes_.capacity() * sizeof(Node) +
             free_.capacity() * sizeof(int32_t) + table_.bytes();
  for (const auto& kv : seqs_) {
    b += 64 + (kv.second.tokens.capacity() + kv.second.frontier.capacity()) * sizeof(int32_t);
  }
  return b;
}

std::string SuffixTree::check_invariants() const {
  std::ostringstream err;
  size_t live = 0;
  std::vector<char> is_free(nodes_.size(), 0);
  for (int32_t f : free_) is_free[f] = 1;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (is_free[i]) continue;
    ++live;
    const Node& n = nodes_[i];
    int64_t sum = 0;
    for (int32_t c = n.first_child; c >= 0; c = nodes_[c].next_sib) {
      if (nodes_[c].parent != static_cast<int32_t>(i)) err << "bad parent at " << c << "; ";
      if (table_.find(key(static_cast<int32_t>(i), nodes_[c].token)) != c)
        err << "table mismatch at " << c << "; ";
      sum += nodes_[c].count;
    }
    if (i > 0 && n.count <= 0) err << "non-positive count at " << i << "; ";
    if (sum > n.count && i > 0) err << "children exceed parent at " << i << "; ";
  }
  if (live != live_nodes_) err << "live count " << live << " != " << live_nodes_ << "; ";
  if (table_.size() + 1 != live_nodes_) err << "table size mismatch; ";
  if (static_cast<size_t>(nodes_[0].count) != num_tokens_) err << "root count mismatch; ";
  return err.str();
}

}  // namespace suffix

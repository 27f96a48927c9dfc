// C++ workload for `make bench`'s DWARF recording: deep template stacks with many distinct frames
// (std::sort, std::map, std::unordered_map, std::regex and std::function, each over several types),
// the shape of a real C++ service's profile rather than one hot loop. Usage: workload SECONDS
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <regex>
#include <string>
#include <unordered_map>
#include <vector>

namespace work {

template <int N>
struct Key {
    long value;
    bool operator<(const Key& other) const { return value * N < other.value * N; }
    bool operator==(const Key& other) const { return value == other.value; }
};

template <int N>
struct KeyHash {
    size_t operator()(const Key<N>& key) const { return std::hash<long>()(key.value ^ N); }
};

template <int N>
__attribute__((noinline)) long sort_them(std::mt19937_64& rng) {
    std::vector<Key<N>> keys(4096);
    for (auto& key : keys) key.value = static_cast<long>(rng() % 100000);
    std::sort(keys.begin(), keys.end());
    return keys[keys.size() / 2].value;
}

template <int N>
__attribute__((noinline)) long map_them(std::mt19937_64& rng) {
    std::map<Key<N>, std::string> tree;
    std::unordered_map<Key<N>, long, KeyHash<N>> hashed;
    for (int i = 0; i < 2000; ++i) {
        Key<N> key{static_cast<long>(rng() % 5000)};
        tree[key] = std::to_string(key.value);
        hashed[key] += i;
    }
    return static_cast<long>(tree.size() + hashed.size());
}

template <int N>
__attribute__((noinline)) long recurse(int depth, std::mt19937_64& rng) {
    if (depth == 0) return (N % 2 ? sort_them<N>(rng) : map_them<N>(rng));
    std::function<long(int)> next = [&rng](int d) { return recurse<N>(d, rng); };
    return next(depth - 1) + 1;
}

__attribute__((noinline)) long scan_text(std::mt19937_64& rng) {
    static const std::regex pattern(R"((\w+)-(\d+))");
    std::string text;
    for (int i = 0; i < 400; ++i) text += "item-" + std::to_string(rng() % 1000) + " ";
    long sum = 0;
    for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it) sum += (*it)[2].length();
    return sum;
}

template <int... Ns>
long round(std::mt19937_64& rng, std::integer_sequence<int, Ns...>) {
    return (recurse<Ns>(Ns % 7 + 2, rng) + ...) + scan_text(rng);
}

}  // namespace work

int main(int argc, char** argv) {
    double seconds = argc > 1 ? std::atof(argv[1]) : 5.0;
    std::mt19937_64 rng(42);
    auto start = std::chrono::steady_clock::now();
    long total = 0;
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds)
        total += work::round(rng, std::make_integer_sequence<int, 24>{});
    std::printf("%ld\n", total);
    return 0;
}

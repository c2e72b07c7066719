import AssetPackFormat

/// Which pack a path of the merged namespace is read from when several installed packs hold it. Apple
/// leaves it undefined; a team uses `fail` or `shuffle` to find code that depends on the winner.
public enum CollisionRule: Sendable, Hashable {
    /// The pack whose ID sorts first (byte order): the same winner every time.
    case first
    /// A read of such a path fails with `pathCollision`, naming the packs.
    case fail
    /// A winner drawn per path from `seed`: another seed, another winner (replay a run with its seed).
    case shuffle(seed: UInt64)

    /// Parses `first`, `fail` or `shuffle` (a random seed) or `shuffle=SEED`.
    public init?(parsing text: String) {
        switch text {
        case "first": self = .first
        case "fail": self = .fail
        case "shuffle": self = .shuffle(seed: UInt64.random(in: 0...UInt64.max))
        default:
            guard text.hasPrefix("shuffle="), let seed = UInt64(text.dropFirst(8)) else { return nil }
            self = .shuffle(seed: seed)
        }
    }

    /// The index of the winner among `count` holders of `path`.
    func winner(of count: Int, path: String) -> Int {
        guard case .shuffle(let seed) = self, count > 1 else { return 0 }
        var hash: UInt64 = seed ^ 0xCBF2_9CE4_8422_2325
        for byte in path.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        var generator = SplitMix64(seed: hash)
        return Int(generator.next() % UInt64(count))
    }
}

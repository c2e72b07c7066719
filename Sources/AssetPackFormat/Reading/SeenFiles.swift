import Crypto

/// The files an extraction has seen, until the index is checked against them: each one's size and digest
/// (48 bytes; no digest for a file whose bytes the archive's own digest covers), and its path. Packs are
/// written in byte order, so while entries keep arriving in it the paths are kept as one run of bytes, found
/// by binary search; an entry out of order moves them into a dictionary of positions. At 100 000 files a
/// dictionary of the 56-byte records took 22 MB while it grew, and the path strings 6 more; the run of bytes
/// takes about 2.5.
struct SeenFiles {
    private var files: [(size: Int64, sha256: SHA256.Digest?)] = []
    // In byte order: the paths' bytes end to end, where each ends, and which were removed.
    private var pathBytes: [UInt8] = []
    private var ends: [Int] = []
    private var removed: [Bool] = []
    // Out of order: where each path's record is.
    private var positions: [PathKey: Int]?

    /// How many were seen.
    var count: Int { files.count }

    func contains(_ key: PathKey) -> Bool { find(key) != nil }

    mutating func insert(_ key: PathKey, size: Int64, sha256: SHA256.Digest?) {
        if positions == nil {
            if let last = ends.indices.last, !path(last).lexicographicallyPrecedes(key.path.utf8) {
                moveToDictionary()
            } else {
                pathBytes.append(contentsOf: key.path.utf8)
                ends.append(pathBytes.count)
                removed.append(false)
            }
        }
        positions?[key] = files.count
        files.append((size, sha256))
    }

    /// The file at `key`, forgotten from now on.
    mutating func remove(_ key: PathKey) -> (size: Int64, sha256: SHA256.Digest?)? {
        guard let at = find(key) else { return nil }
        if positions != nil {
            positions?[key] = nil
        } else {
            removed[at] = true
        }
        return files[at]
    }

    /// The first in byte order of the files not removed.
    var firstKey: PathKey? {
        if let positions { return positions.keys.min() }
        guard let at = removed.firstIndex(of: false) else { return nil }
        return PathKey(String(decoding: path(at), as: UTF8.self))
    }

    private func path(_ at: Int) -> ArraySlice<UInt8> {
        pathBytes[(at == 0 ? 0 : ends[at - 1])..<ends[at]]
    }

    private func find(_ key: PathKey) -> Int? {
        if let positions { return positions[key] }
        var low = 0
        var high = ends.count
        while low < high {
            let middle = (low + high) / 2
            if path(middle).lexicographicallyPrecedes(key.path.utf8) { low = middle + 1 } else { high = middle }
        }
        guard low < ends.count, !removed[low], path(low).elementsEqual(key.path.utf8) else { return nil }
        return low
    }

    private mutating func moveToDictionary() {
        var positions: [PathKey: Int] = [:]
        positions.reserveCapacity(ends.count)
        for at in ends.indices where !removed[at] {
            positions[PathKey(String(decoding: path(at), as: UTF8.self))] = at
        }
        self.positions = positions
        pathBytes = []
        ends = []
        removed = []
    }
}

import SystemPackage

extension FileDescriptor {
    /// Reads from the current offset to the end of the file (for small files such as manifests).
    func readAll() throws -> [UInt8] {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = try chunk.withUnsafeMutableBytes { try self.read(into: $0, retryOnInterrupt: true) }
            if count == 0 { return result }
            result.append(contentsOf: chunk[0..<count])
        }
    }

}

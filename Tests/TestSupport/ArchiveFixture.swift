import CLibArchive
import Foundation
import SystemPackage

/// Writes hand-made tar archives (hostile ones included) and lists entries, straight through libarchive.
public enum ArchiveFixture {
    public enum Kind {
        case file(Data)
        case symlink(String)
        case hardlink(String)
        case fifo
        case device
        case directory
    }

    public struct Entry {
        public var name: String
        public var kind: Kind
        /// A size to declare instead of the data's.
        public var declaredSize: Int64?

        public init(_ name: String, _ kind: Kind, declaredSize: Int64? = nil) {
            self.name = name
            self.kind = kind
            self.declaredSize = declaredSize
        }
    }

    public static func write(_ entries: [Entry], to path: FilePath, zstd: Bool = true) throws {
        let archive = archive_write_new()!
        defer { archive_write_free(archive) }
        archive_write_set_format_pax_restricted(archive)
        if zstd { archive_write_add_filter_zstd(archive) }
        guard archive_write_open_filename(archive, path.string) == 0 else { throw Errno.ioError }
        for item in entries {
            let entry = archive_entry_new()!
            defer { archive_entry_free(entry) }
            archive_entry_set_pathname(entry, item.name)
            archive_entry_set_perm(entry, 0o644)
            var data = Data()
            switch item.kind {
            case .file(let bytes):
                archive_entry_set_filetype(entry, 0o100000)
                data = bytes
                archive_entry_set_size(entry, item.declaredSize ?? Int64(bytes.count))
            case .symlink(let target):
                archive_entry_set_filetype(entry, 0o120000)
                archive_entry_set_symlink(entry, target)
            case .hardlink(let target):
                archive_entry_set_filetype(entry, 0o100000)
                archive_entry_set_hardlink(entry, target)
            case .fifo:
                archive_entry_set_filetype(entry, 0o010000)
            case .device:
                archive_entry_set_filetype(entry, 0o020000)
                archive_entry_set_rdev(entry, 0x0103)
            case .directory:
                archive_entry_set_filetype(entry, 0o040000)
                archive_entry_set_perm(entry, 0o755)
            }
            guard archive_write_header(archive, entry) == 0 else { throw Errno.ioError }
            if !data.isEmpty {
                _ = data.withUnsafeBytes { archive_write_data(archive, $0.baseAddress, $0.count) }
            }
        }
        archive_write_close(archive)
    }

    public static func entryNames(_ path: FilePath) throws -> [String] {
        let archive = archive_read_new()!
        defer { archive_read_free(archive) }
        archive_read_support_filter_all(archive)
        archive_read_support_format_all(archive)
        guard archive_read_open_filename(archive, path.string, 65536) == 0 else { throw Errno.ioError }
        var names: [String] = []
        var entry: OpaquePointer?
        while archive_read_next_header(archive, &entry) == 0 {
            names.append(String(cString: archive_entry_pathname(entry)))
            archive_read_data_skip(archive)
        }
        return names
    }

    /// The JSON of a valid index for the given files.
    public static func index(_ files: [(String, Data)], id: String = "Hostile") -> Data {
        let rows = files.map { name, data in
            #"{"path":"\#(name)","size":\#(data.count),"sha256":"\#(sha256Hex(data))"}"#
        }
        let size = files.reduce(0) { $0 + $1.1.count }
        return Data(
            #"{"formatVersion":1,"assetPackID":"\#(id)","downloadPolicy":{"onDemand":{}},"platforms":["iOS"],"installSize":\#(size),"fileCount":\#(files.count),"files":[\#(rows.joined(separator: ","))]}"#
                .utf8
        )
    }

    public static func sha256Hex(_ data: Data) -> String {
        // Through the library under test would be circular for digest checks; use the sha256sum binary.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("fixture-\(UUID().uuidString)")
        try? data.write(to: scratch)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [scratch.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try? process.run()
        process.waitUntilExit()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return String(output.prefix(64))
    }
}

import Foundation

/// Progress of a migration that copies rows: the table being rebuilt and how far it is.
public struct MigrationProgress: Sendable, Hashable {
    /// The entity (or relationship table) whose rows are being copied.
    public let table: String
    /// Rows copied so far.
    public let rowsDone: Int
    /// Rows to copy.
    public let rowsTotal: Int
    /// The stage of the migration plan running (`"1.0.0 -> 2.0.0"`), or nil for a migration
    /// without a plan.
    public let stage: String?

    init(table: String, rowsDone: Int, rowsTotal: Int, stage: String? = nil) {
        self.table = table
        self.rowsDone = rowsDone
        self.rowsTotal = rowsTotal
        self.stage = stage
    }

    /// The same progress, reported as part of a plan's stage.
    func during(stage: String) -> MigrationProgress {
        MigrationProgress(table: table, rowsDone: rowsDone, rowsTotal: rowsTotal, stage: stage)
    }
}

/// How a store is migrated when its schema changed (OpenSwiftData's own options; SwiftData has
/// none). Part of ``ModelConfiguration``; two configurations that differ only in these options
/// are still equal.
public struct MigrationOptions: Sendable, Hashable {
    /// Whether a migration that rebuilds tables first copies the store to `<store>-backup`
    /// (removed once the migration has committed). On by default. The migration is one
    /// transaction either way; the copy is for the cautious (and for tools that want it kept).
    public var backsUpBeforeRebuilding: Bool = true
    /// Whether the copy is kept after a successful migration.
    public var keepsBackup: Bool = false
    /// Called as rows are copied into rebuilt tables (in batches of 10,000), on the thread
    /// that opens the container, so that command-line tools can draw a progress bar.
    public var progress: (@Sendable (MigrationProgress) -> Void)?
    /// Set by the migration runner for the target version of a custom stage: non-optional
    /// columns that rows have no value for are left nullable for `didMigrate` to fill.
    var defersRequiredColumns = false

    /// The default options.
    public init(backsUpBeforeRebuilding: Bool = true, keepsBackup: Bool = false, progress: (@Sendable (MigrationProgress) -> Void)? = nil) {
        self.backsUpBeforeRebuilding = backsUpBeforeRebuilding
        self.keepsBackup = keepsBackup
        self.progress = progress
    }

    /// Equal when the backup settings are (the progress handler is not compared).
    public static func == (lhs: MigrationOptions, rhs: MigrationOptions) -> Bool {
        lhs.backsUpBeforeRebuilding == rhs.backsUpBeforeRebuilding && lhs.keepsBackup == rhs.keepsBackup
    }

    /// Hashes the backup settings.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(backsUpBeforeRebuilding)
        hasher.combine(keepsBackup)
    }
}

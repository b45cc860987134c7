import MacroTesting
import OpenSwiftDataMacros
import SwiftSyntax
import SwiftSyntaxMacroExpansion
import Testing

/// The macros as the `OpenSwiftData` module declares them. `@Model` is registered with the
/// conformances its `@attached(extension, conformances: Observable, PersistentModel)` role asks
/// for, so that the extension role is expanded too.
private let macroSpecs: [String: MacroSpec] = [
    "Model": MacroSpec(
        type: ModelMacro.self,
        conformances: [
            TypeSyntax(IdentifierTypeSyntax(name: .identifier("Observable"))),
            TypeSyntax(IdentifierTypeSyntax(name: .identifier("PersistentModel"))),
        ]
    ),
    "_PersistedProperty": MacroSpec(type: PersistedPropertyMacro.self),
    "Attribute": MacroSpec(type: AttributeMacro.self),
    "Transient": MacroSpec(type: TransientMacro.self),
    "Unique": MacroSpec(type: UniqueMacro.self),
    "Index": MacroSpec(type: IndexMacro.self),
]

@Suite(.macros(macroSpecs, record: .never))
struct ModelMacroExpansionTests {
    @Test func plainModelWithDesignatedInit() {
        assertMacro {
            """
            @Model
            final class Person {
                var name: String
                var age: Int

                init(name: String, age: Int) {
                    self.name = name
                    self.age = age
                }
            }
            """
        } expansion: {
            #"""
            final class Person {
                var name: String {
                    @storageRestrictions(accesses: _$backingData, initializes: _name)
                    init(initialValue) {
                        if Person._$prepareBackingData(&_$backingData) {
                            _$backingData._setValue(at: 0, forKey: \.name, to: initialValue)
                        }
                        _name = _SwiftDataNoType()
                    }
                    get {
                        access(keyPath: Person._$keyPath_name)
                        return self._$getValue(at: 0, forKey: Person._$keyPath_name)
                    }
                    set {
                        withMutation(keyPath: Person._$keyPath_name) {
                            self._$setValue(at: 0, forKey: Person._$keyPath_name, to: newValue)
                        }
                    }
                }

                private var _name: _SwiftDataNoType

                private static let _$keyPath_name = \Person.name
                var age: Int {
                    @storageRestrictions(accesses: _$backingData, initializes: _age)
                    init(initialValue) {
                        if Person._$prepareBackingData(&_$backingData) {
                            _$backingData._setValue(at: 1, forKey: \.age, to: initialValue)
                        }
                        _age = _SwiftDataNoType()
                    }
                    get {
                        access(keyPath: Person._$keyPath_age)
                        return self._$getValue(at: 1, forKey: Person._$keyPath_age)
                    }
                    set {
                        withMutation(keyPath: Person._$keyPath_age) {
                            self._$setValue(at: 1, forKey: Person._$keyPath_age, to: newValue)
                        }
                    }
                }

                private var _age: _SwiftDataNoType

                private static let _$keyPath_age = \Person.age

                init(name: String, age: Int) {
                    self.name = name
                    self.age = age
                }
                private var _$backingData: any OpenSwiftData.BackingData<Person> = Person._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Person> = Person._$makeInertBackingData()

                public var persistentBackingData: any OpenSwiftData.BackingData<Person> {
                    get {
                        _$backingData
                    }
                    set {
                        _$backingData = newValue
                    }
                }

                public static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    [
                        OpenSwiftData.Schema.PropertyMetadata(name: "name", keypath: \Person.name, defaultValue: nil, metadata: nil),
                        OpenSwiftData.Schema.PropertyMetadata(name: "age", keypath: \Person.age, defaultValue: nil, metadata: nil)
                    ]
                }

                public required init(backingData: any OpenSwiftData.BackingData<Person>) {
                    _name = _SwiftDataNoType()
                    _age = _SwiftDataNoType()
                    _$backingData = backingData
                }
                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<_M>(keyPath: KeyPath<Person, _M>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: KeyPath<Person, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: AnyKeyPath) {
                    func notify<_M>(_ member: _M.Type) {
                        guard let keyPath = keyPath as? KeyPath<Person, _M> else {
                            return
                        }
                        _$observationRegistrar.willSet(self, keyPath: keyPath)
                        _$observationRegistrar.didSet(self, keyPath: keyPath)
                    }
                    _openExistential(type(of: keyPath).valueType, do: notify)
                }

                public struct _SwiftDataNoType: Sendable {
                }
            }

            extension Person: Observable {
            }

            extension Person: PersistentModel {
            }
            """#
        }
    }

    /// swift-syntax's test expansion drops a property's initializer once an accessor macro adds
    /// `get`/`set` (so the snapshot shows `var count {`); the compiler keeps it and hands it to the
    /// `init` accessor. The default value the schema sees is the `defaultValue: 0` in the metadata.
    @Test func defaultValueWithoutTypeAnnotation() {
        assertMacro {
            """
            @Model
            final class Counter {
                var count = 0

                init() {}
            }
            """
        } expansion: {
            #"""
            final class Counter {
                var count {
                    @storageRestrictions(accesses: _$backingData, initializes: _count)
                    init(initialValue) {
                        if Counter._$prepareBackingData(&_$backingData) {
                            _$backingData._setValue(at: 0, forKey: \.count, to: initialValue)
                        }
                        _count = _SwiftDataNoType()
                    }
                    get {
                        access(keyPath: Counter._$keyPath_count)
                        return self._$getValue(at: 0, forKey: Counter._$keyPath_count)
                    }
                    set {
                        withMutation(keyPath: Counter._$keyPath_count) {
                            self._$setValue(at: 0, forKey: Counter._$keyPath_count, to: newValue)
                        }
                    }
                }

                private var _count: _SwiftDataNoType

                private static let _$keyPath_count = \Counter.count

                init() {}
                private var _$backingData: any OpenSwiftData.BackingData<Counter> = Counter._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Counter> = Counter._$makeInertBackingData()

                public var persistentBackingData: any OpenSwiftData.BackingData<Counter> {
                    get {
                        _$backingData
                    }
                    set {
                        _$backingData = newValue
                    }
                }

                public static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    [
                        OpenSwiftData.Schema.PropertyMetadata(name: "count", keypath: \Counter.count, defaultValue: 0, metadata: nil)
                    ]
                }

                public required init(backingData: any OpenSwiftData.BackingData<Counter>) {
                    _count = _SwiftDataNoType()
                    _$backingData = backingData
                }
                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<_M>(keyPath: KeyPath<Counter, _M>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: KeyPath<Counter, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: AnyKeyPath) {
                    func notify<_M>(_ member: _M.Type) {
                        guard let keyPath = keyPath as? KeyPath<Counter, _M> else {
                            return
                        }
                        _$observationRegistrar.willSet(self, keyPath: keyPath)
                        _$observationRegistrar.didSet(self, keyPath: keyPath)
                    }
                    _openExistential(type(of: keyPath).valueType, do: notify)
                }

                public struct _SwiftDataNoType: Sendable {
                }
            }

            extension Counter: Observable {
            }

            extension Counter: PersistentModel {
            }
            """#
        }
    }

    @Test func enumDefaultWithTypeAnnotation() {
        assertMacro {
            """
            @Model
            final class Order {
                var status: Status = .pending

                init() {}
            }
            """
        } expansion: {
            #"""
            final class Order {
                var status: Status {
                    @storageRestrictions(accesses: _$backingData, initializes: _status)
                    init(initialValue) {
                        if Order._$prepareBackingData(&_$backingData) {
                            _$backingData._setValue(at: 0, forKey: \.status, to: initialValue)
                        }
                        _status = _SwiftDataNoType()
                    }
                    get {
                        access(keyPath: Order._$keyPath_status)
                        return self._$getValue(at: 0, forKey: Order._$keyPath_status)
                    }
                    set {
                        withMutation(keyPath: Order._$keyPath_status) {
                            self._$setValue(at: 0, forKey: Order._$keyPath_status, to: newValue)
                        }
                    }
                }

                private var _status: _SwiftDataNoType

                private static let _$keyPath_status = \Order.status

                init() {}
                private var _$backingData: any OpenSwiftData.BackingData<Order> = Order._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Order> = Order._$makeInertBackingData()

                public var persistentBackingData: any OpenSwiftData.BackingData<Order> {
                    get {
                        _$backingData
                    }
                    set {
                        _$backingData = newValue
                    }
                }

                public static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    [
                        OpenSwiftData.Schema.PropertyMetadata(name: "status", keypath: \Order.status, defaultValue: (.pending as Status), metadata: nil)
                    ]
                }

                public required init(backingData: any OpenSwiftData.BackingData<Order>) {
                    _status = _SwiftDataNoType()
                    _$backingData = backingData
                }
                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<_M>(keyPath: KeyPath<Order, _M>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: KeyPath<Order, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: AnyKeyPath) {
                    func notify<_M>(_ member: _M.Type) {
                        guard let keyPath = keyPath as? KeyPath<Order, _M> else {
                            return
                        }
                        _$observationRegistrar.willSet(self, keyPath: keyPath)
                        _$observationRegistrar.didSet(self, keyPath: keyPath)
                    }
                    _openExistential(type(of: keyPath).valueType, do: notify)
                }

                public struct _SwiftDataNoType: Sendable {
                }
            }

            extension Order: Observable {
            }

            extension Order: PersistentModel {
            }
            """#
        }
    }

    @Test func optionalProperty() {
        assertMacro {
            """
            @Model
            final class Person {
                var nickname: String?

                init(nickname: String? = nil) {
                    self.nickname = nickname
                }
            }
            """
        } expansion: {
            #"""
            final class Person {
                var nickname: String? {
                    @storageRestrictions(accesses: _$backingData, initializes: _nickname)
                    init(initialValue) {
                        if Person._$prepareBackingData(&_$backingData) {
                            _$backingData._setValue(at: 0, forKey: \.nickname, to: initialValue)
                        }
                        _nickname = _SwiftDataNoType()
                    }
                    get {
                        access(keyPath: Person._$keyPath_nickname)
                        return self._$getValue(at: 0, forKey: Person._$keyPath_nickname)
                    }
                    set {
                        withMutation(keyPath: Person._$keyPath_nickname) {
                            self._$setValue(at: 0, forKey: Person._$keyPath_nickname, to: newValue)
                        }
                    }
                }

                private var _nickname: _SwiftDataNoType

                private static let _$keyPath_nickname = \Person.nickname

                init(nickname: String? = nil) {
                    self.nickname = nickname
                }
                private var _$backingData: any OpenSwiftData.BackingData<Person> = Person._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Person> = Person._$makeInertBackingData()

                public var persistentBackingData: any OpenSwiftData.BackingData<Person> {
                    get {
                        _$backingData
                    }
                    set {
                        _$backingData = newValue
                    }
                }

                public static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    [
                        OpenSwiftData.Schema.PropertyMetadata(name: "nickname", keypath: \Person.nickname, defaultValue: nil, metadata: nil)
                    ]
                }

                public required init(backingData: any OpenSwiftData.BackingData<Person>) {
                    _nickname = _SwiftDataNoType()
                    _$backingData = backingData
                }
                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<_M>(keyPath: KeyPath<Person, _M>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: KeyPath<Person, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: AnyKeyPath) {
                    func notify<_M>(_ member: _M.Type) {
                        guard let keyPath = keyPath as? KeyPath<Person, _M> else {
                            return
                        }
                        _$observationRegistrar.willSet(self, keyPath: keyPath)
                        _$observationRegistrar.didSet(self, keyPath: keyPath)
                    }
                    _openExistential(type(of: keyPath).valueType, do: notify)
                }

                public struct _SwiftDataNoType: Sendable {
                }
            }

            extension Person: Observable {
            }

            extension Person: PersistentModel {
            }
            """#
        }
    }

    @Test func attributeWithUniqueAndOriginalName() {
        assertMacro {
            """
            @Model
            final class Person {
                @Attribute(.unique, originalName: "old") var email: String

                init(email: String) {
                    self.email = email
                }
            }
            """
        } expansion: {
            #"""
            final class Person {
                var email: String {
                    @storageRestrictions(accesses: _$backingData, initializes: _email)
                    init(initialValue) {
                        if Person._$prepareBackingData(&_$backingData) {
                            _$backingData._setValue(at: 0, forKey: \.email, to: initialValue)
                        }
                        _email = _SwiftDataNoType()
                    }
                    get {
                        access(keyPath: Person._$keyPath_email)
                        return self._$getValue(at: 0, forKey: Person._$keyPath_email)
                    }
                    set {
                        withMutation(keyPath: Person._$keyPath_email) {
                            self._$setValue(at: 0, forKey: Person._$keyPath_email, to: newValue)
                        }
                    }
                }

                private var _email: _SwiftDataNoType

                private static let _$keyPath_email = \Person.email

                init(email: String) {
                    self.email = email
                }
                private var _$backingData: any OpenSwiftData.BackingData<Person> = Person._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Person> = Person._$makeInertBackingData()

                public var persistentBackingData: any OpenSwiftData.BackingData<Person> {
                    get {
                        _$backingData
                    }
                    set {
                        _$backingData = newValue
                    }
                }

                public static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    [
                        OpenSwiftData.Schema.PropertyMetadata(name: "email", keypath: \Person.email, defaultValue: nil, metadata: OpenSwiftData.Schema.Attribute(.unique, originalName: "old"))
                    ]
                }

                public required init(backingData: any OpenSwiftData.BackingData<Person>) {
                    _email = _SwiftDataNoType()
                    _$backingData = backingData
                }
                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<_M>(keyPath: KeyPath<Person, _M>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: KeyPath<Person, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: AnyKeyPath) {
                    func notify<_M>(_ member: _M.Type) {
                        guard let keyPath = keyPath as? KeyPath<Person, _M> else {
                            return
                        }
                        _$observationRegistrar.willSet(self, keyPath: keyPath)
                        _$observationRegistrar.didSet(self, keyPath: keyPath)
                    }
                    _openExistential(type(of: keyPath).valueType, do: notify)
                }

                public struct _SwiftDataNoType: Sendable {
                }
            }

            extension Person: Observable {
            }

            extension Person: PersistentModel {
            }
            """#
        }
    }

    @Test func transientPropertyIsNotPersisted() {
        assertMacro {
            """
            @Model
            final class Person {
                var name: String
                @Transient var cache = 0

                init(name: String) {
                    self.name = name
                }
            }
            """
        } expansion: {
            #"""
            final class Person {
                var name: String {
                    @storageRestrictions(accesses: _$backingData, initializes: _name)
                    init(initialValue) {
                        if Person._$prepareBackingData(&_$backingData) {
                            _$backingData._setValue(at: 0, forKey: \.name, to: initialValue)
                        }
                        _name = _SwiftDataNoType()
                    }
                    get {
                        access(keyPath: Person._$keyPath_name)
                        return self._$getValue(at: 0, forKey: Person._$keyPath_name)
                    }
                    set {
                        withMutation(keyPath: Person._$keyPath_name) {
                            self._$setValue(at: 0, forKey: Person._$keyPath_name, to: newValue)
                        }
                    }
                }

                private var _name: _SwiftDataNoType

                private static let _$keyPath_name = \Person.name
                var cache = 0

                init(name: String) {
                    self.name = name
                }
                private var _$backingData: any OpenSwiftData.BackingData<Person> = Person._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Person> = Person._$makeInertBackingData()

                public var persistentBackingData: any OpenSwiftData.BackingData<Person> {
                    get {
                        _$backingData
                    }
                    set {
                        _$backingData = newValue
                    }
                }

                public static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    [
                        OpenSwiftData.Schema.PropertyMetadata(name: "name", keypath: \Person.name, defaultValue: nil, metadata: nil)
                    ]
                }

                public required init(backingData: any OpenSwiftData.BackingData<Person>) {
                    _name = _SwiftDataNoType()
                    _$backingData = backingData
                }
                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<_M>(keyPath: KeyPath<Person, _M>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: KeyPath<Person, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: AnyKeyPath) {
                    func notify<_M>(_ member: _M.Type) {
                        guard let keyPath = keyPath as? KeyPath<Person, _M> else {
                            return
                        }
                        _$observationRegistrar.willSet(self, keyPath: keyPath)
                        _$observationRegistrar.didSet(self, keyPath: keyPath)
                    }
                    _openExistential(type(of: keyPath).valueType, do: notify)
                }

                public struct _SwiftDataNoType: Sendable {
                }
            }

            extension Person: Observable {
            }

            extension Person: PersistentModel {
            }
            """#
        }
    }

    @Test func uniqueAndIndexInBody() {
        assertMacro {
            #"""
            @Model
            final class Person {
                #Unique<Person>([\.email], [\.first, \.last])
                #Index<Person>([\.name])

                var email: String
                var first: String
                var last: String
                var name: String

                init(email: String, first: String, last: String, name: String) {
                    self.email = email
                    self.first = first
                    self.last = last
                    self.name = name
                }
            }
            """#
        } expansion: {
            #"""
            final class Person {

                var email: String {
                    @storageRestrictions(accesses: _$backingData, initializes: _email)
                    init(initialValue) {
                        if Person._$prepareBackingData(&_$backingData) {
                            _$backingData._setValue(at: 0, forKey: \.email, to: initialValue)
                        }
                        _email = _SwiftDataNoType()
                    }
                    get {
                        access(keyPath: Person._$keyPath_email)
                        return self._$getValue(at: 0, forKey: Person._$keyPath_email)
                    }
                    set {
                        withMutation(keyPath: Person._$keyPath_email) {
                            self._$setValue(at: 0, forKey: Person._$keyPath_email, to: newValue)
                        }
                    }
                }

                private var _email: _SwiftDataNoType

                private static let _$keyPath_email = \Person.email
                var first: String {
                    @storageRestrictions(accesses: _$backingData, initializes: _first)
                    init(initialValue) {
                        if Person._$prepareBackingData(&_$backingData) {
                            _$backingData._setValue(at: 1, forKey: \.first, to: initialValue)
                        }
                        _first = _SwiftDataNoType()
                    }
                    get {
                        access(keyPath: Person._$keyPath_first)
                        return self._$getValue(at: 1, forKey: Person._$keyPath_first)
                    }
                    set {
                        withMutation(keyPath: Person._$keyPath_first) {
                            self._$setValue(at: 1, forKey: Person._$keyPath_first, to: newValue)
                        }
                    }
                }

                private var _first: _SwiftDataNoType

                private static let _$keyPath_first = \Person.first
                var last: String {
                    @storageRestrictions(accesses: _$backingData, initializes: _last)
                    init(initialValue) {
                        if Person._$prepareBackingData(&_$backingData) {
                            _$backingData._setValue(at: 2, forKey: \.last, to: initialValue)
                        }
                        _last = _SwiftDataNoType()
                    }
                    get {
                        access(keyPath: Person._$keyPath_last)
                        return self._$getValue(at: 2, forKey: Person._$keyPath_last)
                    }
                    set {
                        withMutation(keyPath: Person._$keyPath_last) {
                            self._$setValue(at: 2, forKey: Person._$keyPath_last, to: newValue)
                        }
                    }
                }

                private var _last: _SwiftDataNoType

                private static let _$keyPath_last = \Person.last
                var name: String {
                    @storageRestrictions(accesses: _$backingData, initializes: _name)
                    init(initialValue) {
                        if Person._$prepareBackingData(&_$backingData) {
                            _$backingData._setValue(at: 3, forKey: \.name, to: initialValue)
                        }
                        _name = _SwiftDataNoType()
                    }
                    get {
                        access(keyPath: Person._$keyPath_name)
                        return self._$getValue(at: 3, forKey: Person._$keyPath_name)
                    }
                    set {
                        withMutation(keyPath: Person._$keyPath_name) {
                            self._$setValue(at: 3, forKey: Person._$keyPath_name, to: newValue)
                        }
                    }
                }

                private var _name: _SwiftDataNoType

                private static let _$keyPath_name = \Person.name

                init(email: String, first: String, last: String, name: String) {
                    self.email = email
                    self.first = first
                    self.last = last
                    self.name = name
                }
                private var _$backingData: any OpenSwiftData.BackingData<Person> = Person._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Person> = Person._$makeInertBackingData()

                public var persistentBackingData: any OpenSwiftData.BackingData<Person> {
                    get {
                        _$backingData
                    }
                    set {
                        _$backingData = newValue
                    }
                }

                public static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    [
                        OpenSwiftData.Schema.PropertyMetadata(name: "email", keypath: \Person.email, defaultValue: nil, metadata: nil),
                        OpenSwiftData.Schema.PropertyMetadata(name: "first", keypath: \Person.first, defaultValue: nil, metadata: nil),
                        OpenSwiftData.Schema.PropertyMetadata(name: "last", keypath: \Person.last, defaultValue: nil, metadata: nil),
                        OpenSwiftData.Schema.PropertyMetadata(name: "name", keypath: \Person.name, defaultValue: nil, metadata: nil)
                    ]
                }

                public required init(backingData: any OpenSwiftData.BackingData<Person>) {
                    _email = _SwiftDataNoType()
                    _first = _SwiftDataNoType()
                    _last = _SwiftDataNoType()
                    _name = _SwiftDataNoType()
                    _$backingData = backingData
                }
                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<_M>(keyPath: KeyPath<Person, _M>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: KeyPath<Person, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: AnyKeyPath) {
                    func notify<_M>(_ member: _M.Type) {
                        guard let keyPath = keyPath as? KeyPath<Person, _M> else {
                            return
                        }
                        _$observationRegistrar.willSet(self, keyPath: keyPath)
                        _$observationRegistrar.didSet(self, keyPath: keyPath)
                    }
                    _openExistential(type(of: keyPath).valueType, do: notify)
                }

                public struct _SwiftDataNoType: Sendable {
                }

                public static var _$uniquenessConstraints: [[AnyKeyPath]] {
                    OpenSwiftData.Schema.Unique<Person>([\.email], [\.first, \.last])._keyPathGroups
                }

                public static var _$indices: [[AnyKeyPath]] {
                    OpenSwiftData.Schema.Index<Person>([\.name])._keyPathGroups
                }
            }

            extension Person: Observable {
            }

            extension Person: PersistentModel {
            }
            """#
        }
    }

    @Test func publicModelClass() {
        assertMacro {
            """
            @Model
            public final class Person {
                public var name: String

                public init(name: String) {
                    self.name = name
                }
            }
            """
        } expansion: {
            #"""
            public final class Person {
                public var name: String {
                    @storageRestrictions(accesses: _$backingData, initializes: _name)
                    init(initialValue) {
                        if Person._$prepareBackingData(&_$backingData) {
                            _$backingData._setValue(at: 0, forKey: \.name, to: initialValue)
                        }
                        _name = _SwiftDataNoType()
                    }
                    get {
                        access(keyPath: Person._$keyPath_name)
                        return self._$getValue(at: 0, forKey: Person._$keyPath_name)
                    }
                    set {
                        withMutation(keyPath: Person._$keyPath_name) {
                            self._$setValue(at: 0, forKey: Person._$keyPath_name, to: newValue)
                        }
                    }
                }

                private var _name: _SwiftDataNoType

                private static let _$keyPath_name = \Person.name

                public init(name: String) {
                    self.name = name
                }
                private var _$backingData: any OpenSwiftData.BackingData<Person> = Person._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Person> = Person._$makeInertBackingData()

                public var persistentBackingData: any OpenSwiftData.BackingData<Person> {
                    get {
                        _$backingData
                    }
                    set {
                        _$backingData = newValue
                    }
                }

                public static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    [
                        OpenSwiftData.Schema.PropertyMetadata(name: "name", keypath: \Person.name, defaultValue: nil, metadata: nil)
                    ]
                }

                public required init(backingData: any OpenSwiftData.BackingData<Person>) {
                    _name = _SwiftDataNoType()
                    _$backingData = backingData
                }
                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<_M>(keyPath: KeyPath<Person, _M>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: KeyPath<Person, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: AnyKeyPath) {
                    func notify<_M>(_ member: _M.Type) {
                        guard let keyPath = keyPath as? KeyPath<Person, _M> else {
                            return
                        }
                        _$observationRegistrar.willSet(self, keyPath: keyPath)
                        _$observationRegistrar.didSet(self, keyPath: keyPath)
                    }
                    _openExistential(type(of: keyPath).valueType, do: notify)
                }

                public struct _SwiftDataNoType: Sendable {
                }
            }

            extension Person: Observable {
            }

            extension Person: PersistentModel {
            }
            """#
        }
    }
}

@Suite(.macros(macroSpecs, record: .never))
struct ModelMacroDiagnosticTests {
    @Test func modelOnStruct() {
        assertMacro {
            """
            @Model
            struct Person {
                var name: String
            }
            """
        } diagnostics: {
            """
            @Model
            ┬─────
            ╰─ 🛑 @Model can only be applied to a class
            struct Person {
                var name: String
            }
            """
        }
    }

    @Test func modelOnEnum() {
        assertMacro {
            """
            @Model
            enum Kind {
                case a, b
            }
            """
        } diagnostics: {
            """
            @Model
            ┬─────
            ╰─ 🛑 @Model can only be applied to a class
            enum Kind {
                case a, b
            }
            """
        }
    }

    @Test func modelOnGenericClass() {
        assertMacro {
            """
            @Model
            final class Box<Value> {
                var count: Int

                init(count: Int) {
                    self.count = count
                }
            }
            """
        } diagnostics: {
            """
            @Model
            final class Box<Value> {
                           ┬──────
                           ╰─ 🛑 @Model cannot be applied to a generic class
                var count: Int

                init(count: Int) {
                    self.count = count
                }
            }
            """
        }
    }

    @Test func classWithoutInitializer() {
        assertMacro {
            """
            @Model
            final class Person {
                var name: String = ""
            }
            """
        } diagnostics: {
            """
            @Model
            final class Person {
                        ┬─────
                        ╰─ 🛑 @Model requires the class to declare a designated initializer
                var name: String = ""
            }
            """
        }
    }

    @Test func letPersistedProperty() {
        assertMacro {
            """
            @Model
            final class Person {
                let name: String

                init(name: String) {
                    self.name = name
                }
            }
            """
        } diagnostics: {
            """
            @Model
            final class Person {
                let name: String
                ┬──
                ╰─ 🛑 a persisted property of a @Model class must be declared with 'var'
                   ✏️ Replace 'let' with 'var'

                init(name: String) {
                    self.name = name
                }
            }
            """
        } fixes: {
            """
            @Model
            final class Person {
                var name: String

                init(name: String) {
                    self.name = name
                }
            }
            """
        } expansion: {
            #"""
            final class Person {
                var name: String {
                    @storageRestrictions(accesses: _$backingData, initializes: _name)
                    init(initialValue) {
                        if Self._$prepareBackingData(&_$backingData) {
                            _$backingData._setValue(at: 0, forKey: \.name, to: initialValue)
                        }
                        _name = _SwiftDataNoType()
                    }
                    get {
                        access(keyPath: Self._$keyPath_name)
                        return self._$getValue(at: 0, forKey: Self._$keyPath_name)
                    }
                    set {
                        withMutation(keyPath: Self._$keyPath_name) {
                            self._$setValue(at: 0, forKey: Self._$keyPath_name, to: newValue)
                        }
                    }
                }

                private var _name: _SwiftDataNoType

                private static let _$keyPath_name = \Self.name

                init(name: String) {
                    self.name = name
                }
                private var _$backingData: any OpenSwiftData.BackingData<Person> = Person._$inertBackingData

                nonisolated(unsafe) private static let _$inertBackingData: any OpenSwiftData.BackingData<Person> = Person._$makeInertBackingData()

                public var persistentBackingData: any OpenSwiftData.BackingData<Person> {
                    get {
                        _$backingData
                    }
                    set {
                        _$backingData = newValue
                    }
                }

                public static var schemaMetadata: [OpenSwiftData.Schema.PropertyMetadata] {
                    [
                        OpenSwiftData.Schema.PropertyMetadata(name: "name", keypath: \Person.name, defaultValue: nil, metadata: nil)
                    ]
                }

                public required init(backingData: any OpenSwiftData.BackingData<Person>) {
                    _name = _SwiftDataNoType()
                    _$backingData = backingData
                }
                private let _$observationRegistrar = Observation.ObservationRegistrar()

                internal nonisolated func access<_M>(keyPath: KeyPath<Person, _M>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<_M, _MR>(keyPath: KeyPath<Person, _M>, _ mutation: () throws -> _MR) rethrows -> _MR {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public nonisolated func _$notifyObservers(ofChangeTo keyPath: AnyKeyPath) {
                    func notify<_M>(_ member: _M.Type) {
                        guard let keyPath = keyPath as? KeyPath<Person, _M> else {
                            return
                        }
                        _$observationRegistrar.willSet(self, keyPath: keyPath)
                        _$observationRegistrar.didSet(self, keyPath: keyPath)
                    }
                    _openExistential(type(of: keyPath).valueType, do: notify)
                }

                public struct _SwiftDataNoType: Sendable {
                }
            }

            extension Person: Observable {
            }

            extension Person: PersistentModel {
            }
            """#
        }
    }

    @Test func propertyWithDidSet() {
        assertMacro {
            """
            @Model
            final class Person {
                var name: String {
                    didSet { print(name) }
                }

                init(name: String) {
                    self.name = name
                }
            }
            """
        } diagnostics: {
            """
            @Model
            final class Person {
                var name: String {
                    ╰─ 🛑 willSet/didSet observers are not supported on persisted properties; move the logic into a method or mark the property @Transient
                    didSet { print(name) }
                }

                init(name: String) {
                    self.name = name
                }
            }
            """
        }
    }

    @Test func closureTypedProperty() {
        assertMacro {
            """
            @Model
            final class Person {
                var handler: () -> Void

                init(handler: @escaping () -> Void) {
                    self.handler = handler
                }
            }
            """
        } diagnostics: {
            """
            @Model
            final class Person {
                var handler: () -> Void
                             ┬─────────
                             ╰─ 🛑 this property type cannot be stored: use a Codable value type, a collection of Codable values or another @Model class, or mark the property @Transient

                init(handler: @escaping () -> Void) {
                    self.handler = handler
                }
            }
            """
        }
    }

    @Test func transientWithoutDefault() {
        assertMacro {
            """
            @Model
            final class Person {
                @Transient var cache: Int

                init() {
                    cache = 0
                }
            }
            """
        } diagnostics: {
            """
            @Model
            final class Person {
                @Transient var cache: Int
                               ┬─────────
                               ╰─ 🛑 a @Transient property needs a default value, because models loaded from the store skip your initializer

                init() {
                    cache = 0
                }
            }
            """
        }
    }

    @Test func implicitMemberDefaultWithoutType() {
        assertMacro {
            """
            @Model
            final class Order {
                var s = .pending

                init() {}
            }
            """
        } diagnostics: {
            """
            @Model
            final class Order {
                var s = .pending
                        ┬───────
                        ╰─ 🛑 a default value written as an implicit member ('.case') needs an explicit type annotation on the property

                init() {}
            }
            """
        }
    }
}

import MacroTesting
import OpenSwiftDataMacros
import Testing

@Suite(.macros(["Predicate": PredicateMacro.self, "Expression": PredicateExpressionMacro.self], record: .never))
struct PredicateMacroExpansionTests {
    @Test func implicitMemberAndCapturedValue() {
        assertMacro {
            """
            #Predicate<Message> { message in
                message.syncStatus == .pending || (message.syncStatus == .failed && message.retryCount < limit)
            }
            """
        } expansion: {
            #"""
            Foundation.Predicate<Message>({ message in
                    PredicateExpressions.build_Disjunction(lhs: PredicateExpressions.build_Equal(lhs: PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg(message), keyPath: \.syncStatus), rhs: PredicateExpressions.build_Arg(.pending)), rhs: PredicateExpressions.build_Conjunction(lhs: PredicateExpressions.build_Equal(lhs: PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg(message), keyPath: \.syncStatus), rhs: PredicateExpressions.build_Arg(.failed)), rhs: PredicateExpressions.build_Comparison(lhs: PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg(message), keyPath: \.retryCount), rhs: PredicateExpressions.build_Arg(limit), op: .lessThan)))
                })
            """#
        }
    }

    @Test func staticMembersAndComputedConstants() {
        assertMacro {
            """
            #Predicate<Message> { $0.createdAt < Date.now && $0.status != Status.done && $0.sentAt ?? Date.distantPast > Date(timeIntervalSinceNow: -60) }
            """
        } expansion: {
            #"""
            Foundation.Predicate<Message>({
                    PredicateExpressions.build_Conjunction(lhs: PredicateExpressions.build_Conjunction(lhs: PredicateExpressions.build_Comparison(lhs: PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.createdAt), rhs: PredicateExpressions.build_Arg(Date.now), op: .lessThan), rhs: PredicateExpressions.build_NotEqual(lhs: PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.status), rhs: PredicateExpressions.build_Arg(Status.done))), rhs: PredicateExpressions.build_Comparison(lhs: PredicateExpressions.build_NilCoalesce(lhs: PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.sentAt), rhs: PredicateExpressions.build_Arg(Date.distantPast)), rhs: PredicateExpressions.build_Arg(Date(timeIntervalSinceNow: -60)), op: .greaterThan))
                })
            """#
        }
    }

    @Test func nestedClosures() {
        assertMacro {
            """
            #Predicate<Chat> { chat in chat.messages.contains { $0.isUnread && $0.author == chat.owner } && chat.tags.allSatisfy { $0 != "spam" } && chat.messages.filter { $0.isUnread }.count > 2 }
            """
        } expansion: {
            #"""
            Foundation.Predicate<Chat>({ chat in
                    PredicateExpressions.build_Conjunction(lhs: PredicateExpressions.build_Conjunction(lhs: PredicateExpressions.build_contains(PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg(chat), keyPath: \.messages)) {
                                PredicateExpressions.build_Conjunction(lhs: PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.isUnread), rhs: PredicateExpressions.build_Equal(lhs: PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.author), rhs: PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg(chat), keyPath: \.owner)))
                            }, rhs: PredicateExpressions.build_allSatisfy(PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg(chat), keyPath: \.tags)) {
                                PredicateExpressions.build_NotEqual(lhs: PredicateExpressions.build_Arg($0), rhs: PredicateExpressions.build_Arg("spam"))
                            }), rhs: PredicateExpressions.build_Comparison(lhs: PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_filter(PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg(chat), keyPath: \.messages)) {
                                    PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.isUnread)
                                }, keyPath: \.count), rhs: PredicateExpressions.build_Arg(2), op: .greaterThan))
                })
            """#
        }
    }

    @Test func optionalChaining() {
        assertMacro {
            """
            #Predicate<Message> { $0.conversation?.title.hasPrefix("Re:") == true && $0.attachments?.contains { $0.size > 10 } ?? false }
            """
        } expansion: {
            #"""
            Foundation.Predicate<Message>({
                    PredicateExpressions.build_Conjunction(lhs: PredicateExpressions.build_Equal(lhs: PredicateExpressions.build_flatMap(PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.conversation)) { _osd_wrapped0 in
                                PredicateExpressions.build_starts(PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg(_osd_wrapped0), keyPath: \.title), with: PredicateExpressions.build_Arg("Re:"))
                            }, rhs: PredicateExpressions.build_Arg(true)), rhs: PredicateExpressions.build_NilCoalesce(lhs: PredicateExpressions.build_flatMap(PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.attachments)) { _osd_wrapped1 in
                                PredicateExpressions.build_contains(PredicateExpressions.build_Arg(_osd_wrapped1)) {
                                    PredicateExpressions.build_Comparison(lhs: PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.size), rhs: PredicateExpressions.build_Arg(10), op: .greaterThan)
                                }
                            }, rhs: PredicateExpressions.build_Arg(false)))
                })
            """#
        }
    }

    @Test func ifLetTernaryAndUnwrap() {
        assertMacro {
            """
            #Predicate<Message> { (if let date = $0.sentAt { date > cutoff } else { $0.isDraft }) && ($0.isPinned ? $0.score : 0) > 2 && $0.conversation!.isMuted == false }
            """
        } expansion: {
            #"""
            Foundation.Predicate<Message>({
                    PredicateExpressions.build_Conjunction(lhs: PredicateExpressions.build_Conjunction(lhs: PredicateExpressions.build_NilCoalesce(lhs: PredicateExpressions.build_flatMap(PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.sentAt)) { date in
                                    PredicateExpressions.build_Comparison(lhs: PredicateExpressions.build_Arg(date), rhs: PredicateExpressions.build_Arg(cutoff), op: .greaterThan)
                                }, rhs: PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.isDraft)), rhs: PredicateExpressions.build_Comparison(lhs: PredicateExpressions.build_Conditional(PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.isPinned), PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.score), PredicateExpressions.build_Arg(0)), rhs: PredicateExpressions.build_Arg(2), op: .greaterThan)), rhs: PredicateExpressions.build_Equal(lhs: PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_ForcedUnwrap(PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.conversation)), keyPath: \.isMuted), rhs: PredicateExpressions.build_Arg(false)))
                })
            """#
        }
    }

    @Test func stringAndCollectionFunctions() {
        assertMacro {
            """
            #Predicate<Message> { $0.text.localizedStandardContains(query) && $0.text.hasSuffix("!") && !$0.tags.isEmpty && ids.contains($0.id) && ($0.scores.max() ?? 0) > -1 && $0.counts["a", default: 0] % 2 == 0 }
            """
        } expansion: {
            #"""
            Foundation.Predicate<Message>({
                    PredicateExpressions.build_Conjunction(lhs: PredicateExpressions.build_Conjunction(lhs: PredicateExpressions.build_Conjunction(lhs: PredicateExpressions.build_Conjunction(lhs: PredicateExpressions.build_Conjunction(lhs: PredicateExpressions.build_localizedStandardContains(PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.text), PredicateExpressions.build_Arg(query)), rhs: PredicateExpressions.build_hasSuffix(PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.text), PredicateExpressions.build_Arg("!"))), rhs: PredicateExpressions.build_Negation(PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.tags), keyPath: \.isEmpty))), rhs: PredicateExpressions.build_contains(PredicateExpressions.build_Arg(ids), PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.id))), rhs: PredicateExpressions.build_Comparison(lhs: PredicateExpressions.build_NilCoalesce(lhs: PredicateExpressions.build_max(PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.scores)), rhs: PredicateExpressions.build_Arg(0)), rhs: PredicateExpressions.build_Arg(-1), op: .greaterThan)), rhs: PredicateExpressions.build_Equal(lhs: PredicateExpressions.build_Remainder(lhs: PredicateExpressions.build_subscript(PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.counts), PredicateExpressions.build_Arg("a"), default: PredicateExpressions.build_Arg(0)), rhs: PredicateExpressions.build_Arg(2)), rhs: PredicateExpressions.build_Arg(0)))
                })
            """#
        }
    }

    @Test func expressionMacro() {
        assertMacro {
            """
            #Expression<Message, Int> { $0.retryCount * 2 + 1 }
            """
        } expansion: {
            #"""
            Foundation.Expression<Message, Int>({
                    PredicateExpressions.build_Arithmetic(lhs: PredicateExpressions.build_Arithmetic(lhs: PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.retryCount), rhs: PredicateExpressions.build_Arg(2), op: .multiply), rhs: PredicateExpressions.build_Arg(1), op: .add)
                })
            """#
        }
    }

    @Test func unsupportedFunctionIsDiagnosedWithFixIt() {
        assertMacro {
            """
            #Predicate<Message> { $0.text.localizedCaseInsensitiveContains("x") }
            """
        } diagnostics: {
            """
            #Predicate<Message> { $0.text.localizedCaseInsensitiveContains("x") }
                                          ┬───────────────────────────────
                                          ╰─ 🛑 The localizedCaseInsensitiveContains(_:) function is not supported in this predicate
                                             ✏️ use localizedStandardContains(_:), which ignores case and diacritics
            """
        } fixes: {
            """
            #Predicate<Message> { $0.text.localizedStandardContains("x") }
            """
        } expansion: {
            #"""
            Foundation.Predicate<Message>({
                    PredicateExpressions.build_localizedStandardContains(PredicateExpressions.build_KeyPath(root: PredicateExpressions.build_Arg($0), keyPath: \.text), PredicateExpressions.build_Arg("x"))
                })
            """#
        }
    }

    @Test func unsupportedMethodOnInput() {
        assertMacro {
            """
            #Predicate<Message> { $0.text.uppercased() == "X" }
            """
        } diagnostics: {
            """
            #Predicate<Message> { $0.text.uppercased() == "X" }
                                          ┬─────────
                                          ╰─ 🛑 The uppercased() function is not supported in this predicate
            """
        }
    }

    @Test func multipleStatements() {
        assertMacro {
            """
            #Predicate<Message> { message in
                let limit = 3
                return message.retryCount < limit
            }
            """
        } diagnostics: {
            """
            #Predicate<Message> { message in
                let limit = 3
                ╰─ 🛑 A body of more than one statement is not supported in this predicate
                return message.retryCount < limit
            }
            """
        }
    }
}

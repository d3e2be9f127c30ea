#!/usr/bin/perl
# A stand-in for PhysioNet's deid.pl, for tests: the same command line
# (perl deid.pl PREFIX CONFIG, run in deid's folder), the same record format
# in PREFIX.text, and the same outputs: PREFIX.phi ("Patient N<TAB>Note M"
# then "START<TAB>START<TAB>END" byte offsets per PHI, counted from the line
# after START_OF_RECORD), PREFIX.res (each PHI replaced by a [**marker**])
# and PREFIX.info ("Patient N<TAB>Note M" then "START<TAB>END<TAB>TYPE").
# It finds dates (MM/DD/YYYY), phone numbers (NNN-NNN-NNNN), 7-digit numbers,
# the capitalised word after "Dr. " (Last Name (STitle)) or "Mr. "/"Ms. "
# (Last Name (Titles)), and the names that
# pid_patientname.txt in its working directory (lines PID||||FIRST||||LAST)
# lists for the record's patient number (Known patient firstname/lastname),
# as deid.pl does. Like deid.pl it gives a phrase one marker per record, so a
# repeated phrase carries the marker of its first occurrence in .res while
# .info has each occurrence's own type.
# "Gold standard comparison = 1" in the config makes it open PREFIX.deid (and
# die with status 2 when there is none). FAKE_DEID_FAIL=1: exit status 3;
# FAKE_DEID_NO_INFO=1: no .info file.
use strict;
use warnings;

die "usage: deid.pl PREFIX CONFIG\n" unless @ARGV == 2;
my ($prefix, $config) = @ARGV;
exit 3 if $ENV{FAKE_DEID_FAIL};
open(my $cf, '<', $config) or die "Cannot open $config";
my $gold = 0;
while (my $c = <$cf>) { $gold = $1 if $c =~ /^\s*Gold standard comparison\s*=\s*(\d+)/i; }
close $cf;
if ($gold) {
    open(my $g, '<', "$prefix.deid") or die "Cannot open $prefix.deid: $!";
    close $g;
}
my %known;  # patient number -> [first, last]
if (open(my $pf, '<', "pid_patientname.txt")) {
    while (my $l = <$pf>) {
        chomp $l;
        my ($pid, $first, $last) = split /\|\|\|\|/, $l;
        $known{$pid} = [$first, $last] if defined $last;
    }
    close $pf;
}
open(my $in, '<', "$prefix.text") or die "Cannot open $prefix.text";
open(my $phi, '>', "$prefix.phi") or die "Cannot open $prefix.phi";
open(my $res, '>', "$prefix.res") or die "Cannot open $prefix.res";
my $info;
unless ($ENV{FAKE_DEID_NO_INFO}) { open($info, '>', "$prefix.info") or die "Cannot open $prefix.info"; }
my ($patient, $note, $text) = (0, 0, "");
while (my $line = <$in>) {
    if ($line =~ /^START_OF_RECORD=(\d+)\|+(\d+)\|+/) {
        ($patient, $note, $text) = ($1, $2, "");
        print $res $line;
        next;
    }
    if ($line =~ /^\|\|\|\|END_OF_RECORD/) {
        my @found;  # [start, end, type]
        while ($text =~ /(\d{2}\/\d{2}\/\d{4}|\d{3}-\d{3}-\d{4}|\b\d{7}\b)/g) {
            my ($s, $e, $f) = ($-[0], $+[0], $1);
            push @found, [$s, $e, $f =~ /\// ? "Date range (1)" : $f =~ /-/ ? "Telephone/Fax (1)" : "Unit Number 12"];
        }
        while ($text =~ /(Dr|Mr|Ms)\. ([A-Z][a-z]+)/g) {
            my ($s, $e, $title) = ($-[2], $+[2], $1);
            push @found, [$s, $e, $title eq "Dr" ? "Last Name (STitle)" : "Last Name (Titles)"];
        }
        if (my $k = $known{$patient}) {
            for my $i (0, 1) {
                my $name = $k->[$i];
                next unless length $name;
                while ($text =~ /\b\Q$name\E\b/g) {
                    my ($s, $e) = ($-[0], $+[0]);
                    next if grep { $_->[0] == $s } @found;
                    push @found, [$s, $e, $i ? "Known patient lastname" : "Known patient firstname"];
                }
            }
        }
        @found = sort { $a->[0] <=> $b->[0] } @found;
        print $phi "Patient $patient\tNote $note\n";
        print $info "Patient $patient\tNote $note\n" if $info;
        my ($out, $last, %marker) = ("", 0);
        for my $f (@found) {
            my ($s, $e, $type) = @$f;
            print $phi "$s\t$s\t$e\n";
            print $info "$s\t$e\t$type\n" if $info;
            my $phrase = substr($text, $s, $e - $s);
            $marker{$phrase} //= $type;  # one surrogate per phrase and record
            $out .= substr($text, $last, $s - $last) . "[**$marker{$phrase}**]";
            $last = $e;
        }
        $out .= substr($text, $last);
        print $res $out, $line;
        next;
    }
    $text .= $line;
}
close $phi;
close $res;
close $info if $info;
